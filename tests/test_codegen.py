"""`tcinspect codegen`: the kernel catalog, one kernel, the wrapper, saved files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from builders.reports import make_report
from helpers import DATA, SAMPLES, cli
from tcinspect import serialize
from tcinspect.analysis.codegen import codegen_document, fusion_summary
from tcinspect.analysis.kernels import find_kernels
from tcinspect.parse import assemble, events
from tcinspect.report import Target


@pytest.fixture()
def tiny_json(tiny_report, tmp_path):
    p = tmp_path / "tiny.json"
    p.write_text(serialize.dumps(tiny_report, "json"))
    return p


@pytest.fixture()
def gpu_json(tmp_path):
    """A report built from the structured trace recorded on an H200 (Triton kernels)."""
    stages, compiles = assemble.build(events.read_jsonl(DATA / "gpu-trace-torch2.11-h200.jsonl.gz"))
    rep = make_report(torch_version="2.11.0+cu130", device="cuda", target=Target(kind="model", path="gpu_probe.py"),
                      stages=stages, compiles=compiles)
    p = tmp_path / "gpu.yaml"
    p.write_text(serialize.dumps(rep, "yaml"))
    return p


def test_catalog_lists_every_kernel_with_its_fusion(capsys, tiny_json, tiny_report):
    code, out, _err = cli(capsys, "codegen", str(tiny_json))
    assert code == 0
    for o in tiny_report.stages.inductor.outputs:
        for k in o.kernels:
            assert k.name[:12] in out
    assert "fusion:" in out and "ATen ops in the post-grad graph" in out and "extern: addmm" in out


def test_catalog_json_matches_the_report(capsys, tiny_json, tiny_report):
    code, out, _ = cli(capsys, "codegen", str(tiny_json), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc == json.loads(json.dumps(codegen_document(tiny_report)))
    assert doc["summary"]["kernels"] == tiny_report.summary.kernels


def test_kernel_by_exact_substring_and_glob(capsys, tiny_json, tiny_report):
    cpp = next(k for o in tiny_report.stages.inductor.outputs for k in o.kernels if k.kind == "cpp")
    code, out, _ = cli(capsys, "codegen", str(tiny_json), "--kernel", cpp.name)
    assert code == 0 and 'extern "C"' in out and "fused ATen ops" in out
    assert len(find_kernels(tiny_report, "cpp_fused_*")) == sum(
        1 for o in tiny_report.stages.inductor.outputs for k in o.kernels if k.name.startswith("cpp_fused_"))
    assert find_kernels(tiny_report, "addmm")[0][1].kind == "extern"
    code, out, _ = cli(capsys, "codegen", str(tiny_json), "--kernel", "addmm")
    assert code == 0 and "extern kernel" in out


def test_no_matching_kernel_lists_the_nearest_and_exits_2(capsys, tiny_json):
    code, _, err = cli(capsys, "codegen", str(tiny_json), "--kernel", "cpp_fusd_relu")
    assert code == 2
    assert "no kernel matches 'cpp_fusd_relu'" in err and "nearest names: cpp_fused" in err


def test_wrapper_and_save(capsys, tiny_json, tiny_report, tmp_path):
    code, out, _ = cli(capsys, "codegen", str(tiny_json), "--wrapper")
    assert code == 0 and "def call(self, args)" in out
    target = tmp_path / "saved"
    code, _, err = cli(capsys, "codegen", str(tiny_json), "--save", str(target))
    assert code == 0 and f"to {target}" in err
    files = sorted(p.name for p in target.iterdir())
    outputs = tiny_report.stages.inductor.outputs
    assert sum(f.endswith("_wrapper.py") for f in files) == len(outputs)
    assert sum(f.endswith(".cpp") for f in files) == sum(1 for o in outputs for k in o.kernels if k.kind == "cpp")


def test_recorded_gpu_report_shows_triton_and_user_kernels(capsys, gpu_json):
    code, out, _ = cli(capsys, "codegen", str(gpu_json), "--format", "json")
    doc = json.loads(out)
    kinds = {k["name"]: k["kind"] for o in doc["outputs"] for k in o["kernels"]}
    assert kinds["relu_kernel_0"] == "user_triton"
    assert kinds["triton_poi_fused_gt_0"] == "triton_pointwise"
    code, out, _ = cli(capsys, "codegen", str(gpu_json), "--kernel", "relu_kernel_0")
    assert code == 0 and "@triton.jit" in out and "grid (8, 1, 1)" in out


def test_fusion_summary_counts(tiny_report):
    assert {o.part for o in tiny_report.stages.inductor.outputs} == {"forward", "backward"}
    for o in tiny_report.stages.inductor.outputs:
        f = fusion_summary(o)
        assert f.kernels == len(o.kernels) == f.generated_kernels + f.extern_kernels
        assert f.post_grad_ops >= f.kernels


@pytest.mark.torch
def test_report_without_inductor_is_one_line(capsys, tmp_path):
    p = tmp_path / "r.json"
    code, _, _ = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--backend", "eager", "-o", str(p), "-f", "json")
    assert code == 0
    code, _, err = cli(capsys, "codegen", str(p))
    assert code == 2 and "no Inductor output code" in err and "not run by backend 'eager'" in err


def test_codegen_from_a_report_does_not_import_torch(tiny_json):
    script = ("import sys; from tcinspect.cli import main; code = main(['codegen', sys.argv[1], '--kernel', 'cpp_fused']);"
              "sys.exit(10 + code if 'torch' in sys.modules else code)")
    res = subprocess.run([sys.executable, "-c", script, str(tiny_json)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
