"""Custom backends, graph passes, `verify`, `export`, user Triton kernels and custom ops (CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.reports import make_report
from helpers import DATA, SAMPLES, cli

pytestmark = pytest.mark.torch
SILU = SAMPLES / "silu_pass.py"
REWRITE = f"{SILU}:rewrite_silu"
BACKENDS = Path(__file__).resolve().parent / "models" / "backends.py"


# --- pure parts: no torch -------------------------------------------------------------------

def test_graph_changes_pairs_a_replacement_and_reports_in_place_edits():
    from tcinspect.capturing.custom import NodeText, graph_changes

    before = [NodeText("x", "x", ()), NodeText("sigmoid", "sigmoid = aten.sigmoid.default(x)", ("x",)),
              NodeText("mul", "mul = aten.mul.Tensor(sigmoid, x)", ("sigmoid", "x")),
              NodeText("add", "add = aten.add.Tensor(mul, x)", ("mul", "x")), NodeText("output", "output = output(add)", ("add",))]
    after = [NodeText("x", "x", ()), NodeText("silu", "silu = aten.silu.default(x)", ("x",)),
             NodeText("add", "add = aten.add.Tensor(silu, x)", ("silu", "x")), NodeText("output", "output = output(add)", ("add",))]
    changes = graph_changes(before, after)
    assert ("replaced", "mul = aten.mul.Tensor(sigmoid, x)", "silu = aten.silu.default(x)") in changes
    assert ("removed", "sigmoid = aten.sigmoid.default(x)", "") in changes
    assert ("changed", "add = aten.add.Tensor(mul, x)", "add = aten.add.Tensor(silu, x)") in changes
    assert len(changes) == 3
    assert graph_changes(before, before) == []


def test_user_triton_kernel_and_transparent_op_from_a_recorded_gpu_trace():
    from tcinspect.parse.assemble import build
    from tcinspect.parse.events import read_jsonl

    stages, _ = build(read_jsonl(DATA / "gpu-trace-triton-op.jsonl.gz"),
                      side_table=({0: ("silu_kernel", "@triton.jit\ndef silu_kernel(...): ...\n")}, {2: "n=1024"}))
    (k,) = stages.aot_autograd.user_kernels
    assert (k.name, k.kernel_idx, k.graph, k.grid) == ("silu_kernel", 0, "inference", "[(1, 1, 1)]")
    assert k.tensor_args == ("in_ptr=addmm", "out_ptr=empty") and k.mutated == ("out_ptr",)
    assert k.constant_args == "n=1024" and "def silu_kernel" in k.source
    (op,) = stages.aot_autograd.custom_ops
    assert op.name == "probe.silu" and op.visibility == "transparent" and "silu_kernel" in op.detail
    # Inductor launched it as a user kernel
    kinds = {kk.name: kk.kind for o in stages.inductor.outputs for kk in o.kernels}
    assert kinds.get("silu_kernel_0") == "user_triton"


def test_a_plain_triton_call_traced_by_dynamo_is_transparent():
    from tcinspect.parse.assemble import build
    from tcinspect.parse.events import read_jsonl

    stages, _ = build(read_jsonl(DATA / "gpu-trace-torch2.11-h200.jsonl.gz"))
    kernels = stages.aot_autograd.user_kernels
    # no live side table (a recorded trace): named by the kernels Inductor's wrapper launched
    assert kernels and {k.graph for k in kernels} == {"forward"} and kernels[0].name == "relu_kernel"
    assert "def relu_kernel" in kernels[0].source
    assert kernels[0].mutated == ("output_ptr",) and kernels[0].grid == "[(8, 1, 1)]"
    assert any("Dynamo traced" in op.detail and op.visibility == "transparent" for op in stages.aot_autograd.custom_ops)


def test_report_with_passes_verification_and_exports_round_trips():
    from tcinspect import serialize
    from tcinspect.report import (
        AotiRun,
        ExportRun,
        ExportSignature,
        NodeChange,
        PassRun,
        TensorCheck,
        Verification,
    )

    rep = make_report(passes=(PassRun("m:p", "0/0", "forward", 7, 6, (NodeChange("removed", "a = f(x)", ""),)),),
                      verification=Verification(False, (TensorCheck("output", "float32", (2, 3), 0.5, 0.25, 1e-4, 1e-5,
                                                                    False, "Mismatched elements: 1 / 6"),)),
                      exports=(ExportRun("strict", True, signature=ExportSignature(user_inputs=("x",)),
                                         aoti=AotiRun(True, "model-strict.pt2", 0.0)),))
    for fmt in ("yaml", "json"):
        assert serialize.loads(serialize.dumps(rep, fmt)) == rep


# --- custom backends ------------------------------------------------------------------------

def test_custom_backend_target_records_what_it_was_handed():
    from tcinspect.capturing.custom import load_callable
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import NOT_RUN, OK, CompileOptions

    oracle = load_callable(f"{BACKENDS}:counting_backend", "--backend").__globals__["SEEN"]  # the same module
    oracle.clear()
    rep = capture_file(SILU, compile=CompileOptions(backend=f"{BACKENDS}:counting_backend"))
    assert rep.ok and rep.stages.dynamo.status == OK
    graphs = rep.stages.dynamo.graphs
    assert len(graphs) == len(oracle) == 1  # one graph per backend call
    assert graphs[0].example_inputs == ("f32[256, 256]",) and oracle == [[(256, 256)]]
    for stage in (rep.stages.aot_autograd, rep.stages.inductor):
        assert stage.status == NOT_RUN and "not run by backend" in stage.error


def test_module_callable_backend_is_imported_from_the_working_directory(capsys, monkeypatch):
    monkeypatch.chdir(BACKENDS.parent)
    code, out, err = cli(capsys, "trace", str(SILU), "--backend", "backends:counting_backend", "--stage", "dynamo")
    assert code == 0, err
    assert "handed to backend backends:counting_backend: f32[256, 256]" in out


@pytest.mark.parametrize("spec, message", [
    ("no_such_module_xyz:fn", "cannot import --backend 'no_such_module_xyz:fn': ModuleNotFoundError"),
    ("missing_file.py:fn", "--backend 'missing_file.py:fn': no file missing_file.py"),
    (f"{BACKENDS}:nope", "has no attribute 'nope'"),
    (f"{BACKENDS}:NOT_CALLABLE", "NOT_CALLABLE is a int, not callable"),
    ("no_such_backend", "unknown backend 'no_such_backend'"),
])
def test_bad_backend_targets_are_one_line_exit_2(capsys, spec, message):
    code, _out, err = cli(capsys, "trace", str(SILU), "--backend", spec)
    assert code == 2 and message in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_a_backend_that_raises_is_exit_2_with_the_report_so_far(capsys):
    code, out, err = cli(capsys, "trace", str(SILU), "--backend", f"{BACKENDS}:raising_backend")
    assert code == 2 and "--backend" in err and "RuntimeError: no lowering for this" in err
    assert "dynamo_output_graph 0/0" in out  # what ran before it is still shown
    assert "Traceback" not in err


def test_backend_handing_on_to_inductor_shows_every_stage_and_verifies(inductor_cache):
    """The tutorial's composition: rewrite, then compile_fx. AOT and Inductor stages appear; eager == compiled."""
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import OK, CompileOptions, VerifyRequest

    rep = capture_file(SILU, compile=CompileOptions(backend=f"{SILU}:silu_then_inductor"), verify=VerifyRequest())
    assert rep.ok and rep.stages.aot_autograd.status == OK and rep.stages.inductor.status == OK
    (fwd_aot,) = [g.forward for g in rep.stages.aot_autograd.graphs]
    targets = {n.target for n in fwd_aot.nodes}
    # the rewrite reached AOTAutograd: Inductor's decomposition of silu (x / (1 + exp(-x))), no sigmoid
    assert {"aten.exp.default", "aten.div.Tensor"} <= targets and "aten.sigmoid.default" not in targets
    assert rep.stages.inductor.outputs[0].kernels
    v = rep.verification
    assert v is not None and v.ok and [c.name for c in v.tensors] == ["output", "grad input[0]"]


# --- passes ---------------------------------------------------------------------------------

def test_silu_pass_on_aot_eager_reports_its_rewrite():
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    rep = capture_file(SILU, compile=CompileOptions(backend="aot_eager", passes=(REWRITE,)))
    assert rep.ok
    assert [(p.graph, p.lint) for p in rep.passes] == [("forward", "ok"), ("backward", "ok")]
    fwd = rep.passes[0]
    assert fwd.name == REWRITE and fwd.compile_id == "0/0"
    replaced = [c for c in fwd.changes if c.change == "replaced"]
    assert len(replaced) == 1 and "aten.mul.Tensor(sigmoid" in replaced[0].before
    assert "aten.silu.default" in replaced[0].after
    # the backward has no sigmoid * x: nothing to rewrite
    assert rep.passes[1].changes == ()


def test_pass_table_in_trace(capsys):
    code, out, err = cli(capsys, "trace", str(SILU), "--backend", "aot_eager", "--pass", REWRITE, "--stage", "aot")
    assert code == 0, err
    assert "Graph passes (before Inductor)" in out and "replaced" in out and "lint ok" in out


@pytest.mark.parametrize("target, message", [
    ("returns_none", "returned NoneType, not a GraphModule"),
    ("breaks_lint", "fails graph.lint()"),
    ("raising_pass", "raised ValueError: pattern table missing"),
])
def test_misbehaving_passes_are_exit_2_with_the_partial_report(capsys, target, message):
    code, out, err = cli(capsys, "trace", str(SILU), "--backend", "aot_eager", "--pass", f"{BACKENDS}:{target}")
    assert code == 2 and f"--pass '{BACKENDS}:{target}'" in err and message in err
    assert "dynamo_output_graph" in out and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (("--backend", "eager", "--pass", REWRITE), "backend 'eager' makes none"),
    (("--backend", f"{BACKENDS}:counting_backend", "--pass", REWRITE), "apply the pass inside your backend"),
    (("--pass", REWRITE, "--mode", "max-autotune"), "--mode max-autotune configures Inductor"),
    (("--pass", "nope_module:fn"), "cannot import --pass 'nope_module:fn'"),
])
def test_pass_option_misuse(capsys, args, message):
    code, _, err = cli(capsys, "trace", str(SILU), *args)
    assert code == 2 and message in err


# --- verify ---------------------------------------------------------------------------------

def test_verify_catches_a_wrong_backend_and_tolerances_override(capsys):
    bad = f"{BACKENDS}:off_by_a_bit"
    code, out, err = cli(capsys, "verify", str(SILU), "--backend", bad)
    assert code == 1, err
    assert "FAIL" in out and "MISMATCH" in out and "Mismatched elements" in out
    code, out, _ = cli(capsys, "verify", str(SILU), "--backend", bad, "--atol", "0.1", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["verification"]["ok"] is True
    out_check = doc["verification"]["tensors"][0]
    assert out_check["name"] == "output" and out_check["atol"] == 0.1
    assert 0.009 < out_check["max_abs_error"] < 0.011  # the backend adds 0.01


def test_verify_compares_parameter_gradients(capsys):
    code, out, err = cli(capsys, "verify", str(SAMPLES / "custom_ops.py"), "--backend", "aot_eager", "-f", "json")
    assert code == 0, err
    names = [t["name"] for t in json.loads(out)["verification"]["tensors"]]
    assert names == ["output", "grad fc.weight", "grad fc.bias"]


@pytest.mark.slow
def test_verify_a_pass_in_front_of_inductor(capsys, inductor_cache):
    """The tutorial's SiLU rewrite puts aten.silu, which Inductor only decomposes, into the forward graph: the
    report names it, the graph is decomposed again for Inductor, and the compiled model equals eager."""
    code, out, err = cli(capsys, "verify", str(SILU), "--pass", REWRITE, "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verification"]["ok"] is True
    assert [t["name"] for t in doc["verification"]["tensors"]] == ["output", "grad input[0]"]
    fwd, bwd = doc["passes"]
    assert (fwd["graph"], fwd["decomposed"], fwd["error"]) == ("forward", ["aten.silu.default"], "")
    assert bwd["decomposed"] == []  # nothing to rewrite in the backward
    assert "replaced" in [c["change"] for c in fwd["changes"]]
    # Inductor compiled the decomposed result, and its kernel still names the model's line
    (kernel,) = [k for o in doc["stages"]["inductor"]["outputs"] if o["part"] == "forward" for k in o["kernels"]]
    line = next(i for i, t in enumerate(SILU.read_text().splitlines(), 1) if "the first term IS SiLU" in t)
    assert f"silu_pass.py:{line}" in " ".join(kernel["user_lines"])
    code, out, err = cli(capsys, "trace", str(SILU), "--pass", REWRITE, "--stage", "aot")
    assert code == 0 and "decomposed for Inductor: aten.silu.default" in out


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_verify_fails_on_a_pass_that_changes_the_numbers(capsys, inductor_cache, backend):
    code, out, err = cli(capsys, "verify", str(SILU), "--backend", backend, "--pass", f"{SILU}:sigmoid_to_hardsigmoid")
    assert code == 1, err
    assert "FAIL" in out and "MISMATCH" in out and "Traceback" not in err


@pytest.mark.slow
def test_a_pass_runs_on_a_cache_the_users_plain_run_filled(capsys, tmp_path, monkeypatch):
    """The user's own torch.compile run fills AOTAutograd's cache, whose key cannot see a --pass: the pass must
    still run (not the user's cached, unchanged graphs), and nothing is written to that cache."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "inductor-cache"
    plain = ("import runpy, sys, torch; ns = runpy.run_path(sys.argv[1]); "
             "torch.compile(ns['model'])(*ns['example_inputs']).sum().backward()")
    subprocess.run([sys.executable, "-c", plain, str(SILU)], check=True, timeout=600,
                   env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), INDUCTOR_PROVENANCE="0"))

    def entries() -> dict[str, float]:
        return {str(p): p.stat().st_mtime for p in (cache / "aotautograd").rglob("*") if p.is_file()}

    filled = entries()
    assert filled  # the plain run saved its AOTAutograd entries
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    code, out, err = cli(capsys, "verify", str(SILU), "--pass", f"{SILU}:sigmoid_to_hardsigmoid", "-f", "json")
    assert code == 1, err  # the pass ran: its hardsigmoid differs from eager
    doc = json.loads(out)
    assert doc["verification"]["ok"] is False and [p["graph"] for p in doc["passes"]] == ["forward", "backward"]
    assert entries() == filled


@pytest.mark.slow
def test_verify_shows_why_a_capture_failed(capsys):
    """A pass that raises: the pass's own line and exit 2, not "this report has no verify section"."""
    code, out, err = cli(capsys, "verify", str(SILU), "--backend", "aot_eager", "--pass", f"{BACKENDS}:raising_pass")
    assert code == 2 and "raised ValueError: pattern table missing" in err and out == ""
    assert "no verify section" not in err and "Traceback" not in err


def test_verify_on_a_report_without_a_comparison(capsys, tmp_path, breaks_report):
    from tcinspect import serialize

    path = tmp_path / "r.yaml"
    path.write_text(serialize.dumps(breaks_report, "yaml"))
    code, _, err = cli(capsys, "verify", str(path))
    assert code == 2 and "no verify section" in err


# --- export ---------------------------------------------------------------------------------

def test_export_matrix_strict_fails_where_dynamo_refuses(capsys):
    code, out, err = cli(capsys, "export", str(SAMPLES / "export_cases.py"), "--dynamic-dim", "0", "-f", "json")
    assert code == 1, err  # a mode failed
    runs = {e["mode"]: e for e in json.loads(out)["exports"]}
    assert runs["strict"]["ok"] is False and "graph_break" in runs["strict"]["error"]
    lines = (SAMPLES / "export_cases.py").read_text().splitlines()
    assert "graph_break()" in lines[runs["strict"]["user_frame"]["line"] - 1]
    ns = runs["non-strict"]
    assert ns["ok"] is True and ns["signature"]["user_inputs"] == ["x"]
    assert ns["signature"]["parameters"] == ["p_proj_weight <- proj.weight", "p_proj_bias <- proj.bias"]
    assert ns["signature"]["buffers"] == ["b_scale <- scale"]
    x = next(n for n in ns["graph"]["nodes"] if n["name"] == "x")
    assert x["shape"][0].startswith("s") and x["shape"][1] == "16"  # batch is dynamic


def test_export_of_an_opaque_custom_op_keeps_the_call(capsys):
    code, out, err = cli(capsys, "export", str(SAMPLES / "custom_ops.py"), "--strict", "-f", "json")
    assert code == 0, err
    (run,) = json.loads(out)["exports"]
    assert "tcinspect_samples.scaled_tanh.default" in [n["target"] for n in run["graph"]["nodes"]]


@pytest.mark.slow
def test_export_aoti_package_matches_eager(capsys, inductor_cache):
    code, out, err = cli(capsys, "export", str(SAMPLES / "export_cases.py"), "--non-strict", "--aoti", "-f", "json")
    assert code == 0, err
    (run,) = json.loads(out)["exports"]
    assert run["aoti"]["ok"] is True and run["aoti"]["package"] == "model-non-strict.pt2"
    assert run["aoti"]["max_abs_error"] < 1e-5


def test_custom_op_visibility_on_cpu():
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    rep = capture_file(SAMPLES / "custom_ops.py", compile=CompileOptions(backend="aot_eager"))
    ops = {op.name: op.visibility for op in rep.stages.aot_autograd.custom_ops}
    assert ops == {"tcinspect_samples.scaled_tanh": "opaque"}


def test_symbolic_shapes_survive_the_terminal_table(capsys):
    """"f32[s77, 16]" looks like Rich markup ("[s77, 16]"); the table must print it as data."""
    code, out, err = cli(capsys, "export", str(SAMPLES / "export_cases.py"), "--non-strict", "--dynamic-dim", "0")
    assert code == 0, err
    assert "f32[s77, 16]" in out or "f32[s" in out


def test_passes_and_verify_work_in_an_isolated_capture(capsys):
    code, out, err = cli(capsys, "verify", str(SILU), "--backend", "aot_eager", "--pass", REWRITE,
                         "--timeout", "300", "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verification"]["ok"] and doc["options"]["passes"] == [REWRITE]
    assert [p["graph"] for p in doc["passes"]] == ["forward", "backward"]


def test_an_aoti_crash_is_that_modes_failure_not_tcinspects(capsys):
    code, out, _err = cli(capsys, "export", str(Path(__file__).parent / "models" / "aoti_crash.py"), "--non-strict",
                         "--aoti", "-f", "json")
    (run,) = json.loads(out)["exports"]
    assert code == 1 and run["ok"] is True  # the export itself worked
    assert run["aoti"]["ok"] is False and "AOTInductor crashed its process (killed by SIGABRT)" in run["aoti"]["error"]
    assert "aoti_crash.py:8" in run["aoti"]["error"] or "<module>" in run["aoti"]["error"]


def test_a_side_table_from_another_process_cannot_mislabel_a_user_kernel():
    """kernel_idx values of a cached graph index the table of the process that filled the cache."""
    from tcinspect.parse.assemble import build
    from tcinspect.parse.events import read_jsonl

    stages, _ = build(read_jsonl(DATA / "gpu-trace-triton-op.jsonl.gz"),
                      side_table=({0: ("some_other_kernel", "def some_other_kernel(): ...")}, {}))
    (k,) = stages.aot_autograd.user_kernels
    assert k.name == "silu_kernel" and "some_other_kernel" not in k.source
