"""What a real project meets on its first day: models in imported modules (the cache sees them),
training scripts (their `model` under __main__), outputs that are dataclasses or ModelOutputs, and
float32 rounding in `verify`."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil

import pytest

from conformance import MODELS
from helpers import SAMPLES, cli, render_text, run_cli

# --- script detection ------------------------------------------------------------------------


@pytest.mark.parametrize("source, is_model", [
    ("model = 1", True),
    ("if __name__ == '__main__':\n    model = 1", False),
    ("if '__main__' == __name__:\n    model = 1", False),
    ("if __name__ != '__main__':\n    model = 1", True),
    ("if __name__ == '__main__':\n    pass\nelse:\n    model = 1", True),
    ("def main():\n    model = 1", False),
    ("class Trainer:\n    model = 1", False),
    ("try:\n    model = 1\nexcept ImportError:\n    pass", True),
    ("import torch\nif torch.cuda.is_available():\n    model = 1\nelse:\n    model = 2", True),
    ("from mypkg import model", True),
    ("for model in range(3):\n    pass", True),
])
def test_a_model_file_binds_model_when_imported(source, is_model):
    from tcinspect.capturing.modelfile import import_time_names

    assert ("model" in import_time_names(ast.parse(source).body)) is is_model


@pytest.mark.torch
def test_a_training_script_with_model_under_main_runs_as_a_script(capsys):
    code, out, err = cli(capsys, "trace", str(MODELS / "train_script.py"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["kind"] == "script" and doc["summary"]["graphs"] >= 1


@pytest.mark.torch
def test_model_forces_model_mode_and_script_forces_script_mode(capsys, tmp_path):
    code, _, err = cli(capsys, "trace", str(MODELS / "train_script.py"), "--model", "model")
    assert code == 2 and "defines no `model`" in err
    # tiny.py defines `model`, yet --script runs it as __main__ (it compiles nothing by itself)
    code, _, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--script")
    assert code == 2 and "run as a script (--script) and compiled nothing" in err
    code, _, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--script", "--model", "model")
    assert code == 2 and "contradict" in err


@pytest.mark.torch
def test_script_detection_is_the_same_in_an_isolated_capture(capsys):
    code, out, err = cli(capsys, "trace", str(MODELS / "train_script.py"), "--timeout", "300", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["target"]["kind"] == "script"
    code, _, err = cli(capsys, "trace", str(MODELS / "train_script.py"), "--timeout", "300", "--model", "model")
    assert code == 2 and "defines no `model`" in err


@pytest.mark.distributed
def test_script_detection_is_the_same_under_nproc(tmp_path):
    res = run_cli("trace", str(MODELS / "train_script.py"), "--nproc", "2", "--stage", "summary", timeout=600)
    assert res.returncode == 0, res.stderr
    assert "Divergence: none" in res.stdout


# --- backward for any output -----------------------------------------------------------------


def test_backward_runs_on_every_floating_leaf_of_a_dataclass_output():
    import torch

    from tcinspect.capturing.engine import capture
    from tcinspect.capturing.outputs import named_tensors, scalar_loss
    from tcinspect.report import CompileOptions

    @dataclasses.dataclass
    class Out:
        logits: torch.Tensor
        extras: dict
        ids: torch.Tensor

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            return Out(h, {"aux": [h.sin()], "none": None}, x.argmax(-1))

    x = torch.randn(2, 4)
    out = Net()(x)
    assert [n for n, _ in named_tensors(out)] == ["output.logits", "output.extras['aux'][0]", "output.ids"]
    torch.testing.assert_close(scalar_loss(out), out.logits.sum() + out.extras["aux"][0].sum())
    rep = capture(Net(), x, compile=CompileOptions(backend="aot_eager"))
    assert any(g.backward is not None for g in rep.stages.aot_autograd.graphs)


# --- verify against numerical noise ------------------------------------------------------------


def test_float32_rounding_passes_and_a_changed_result_fails():
    import torch

    from tcinspect.capturing.verify import check
    from tcinspect.report import VerifyRequest

    # one sum of cancelling terms in two summation orders: float32 rounding, as a fused kernel makes
    g = torch.Generator().manual_seed(0)
    terms = torch.randn(4096, 512, generator=g, dtype=torch.float64)
    terms -= terms.mean(dim=1, keepdim=True)
    truth = terms.sum(dim=1)
    eager = terms.float().sum(dim=1)
    reordered = terms.float().view(4096, 16, 32).sum(dim=2).sum(dim=1)
    assert not torch.allclose(reordered, eager, rtol=1e-4, atol=1e-5)  # the dtype tolerances reject it
    ok = check("grad wte.weight", reordered, eager, VerifyRequest(), truth)
    assert ok.ok and ok.fp64_rmse > 0 and ok.eager_fp64_rmse > 0
    bad = check("grad wte.weight", eager * 1.001 + 1e-3, eager, VerifyRequest(), truth)
    assert not bad.ok and "RMSE from float64 eager" in bad.message


@pytest.mark.torch
def test_a_pass_that_changes_the_math_still_fails_verify(capsys):
    code, out, err = cli(capsys, "verify", str(SAMPLES / "tiny.py"), "--backend", "aot_eager", "--pass",
                         f"{MODELS.parent / 'models' / 'drift_pass.py'}:scale_drift", "-f", "json")
    assert code == 1, err
    v = json.loads(out)["verification"]
    assert v["reference"] == "float64" and not v["ok"]
    assert {t["name"] for t in v["tensors"]} == {"output", "grad linear.weight", "grad linear.bias"}


def test_verify_shows_whole_parameter_names():

    from tcinspect.render.extensions import tensor_table
    from tcinspect.report import TensorCheck

    name = "grad transformer.h.0.attn.c_attn.weight_with_a_long_suffix"
    text = render_text(tensor_table([TensorCheck(name, "float32", (64, 192), 1e-7, 1e-6, 1e-4, 1e-5, True)], "t"), 100)
    # the first column's pieces, line by line, make up the whole name (folded, not cut with "…")
    cells = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert " ".join(cells).replace("grad ", "grad\0").replace(" ", "").replace("\0", " ") == name


# --- the cache sees the code ------------------------------------------------------------------


@pytest.mark.torch
def test_editing_a_traced_module_recompiles_and_an_untraced_one_does_not(tmp_path):
    shutil.copytree(MODELS / "two_file", tmp_path / "proj")
    proj = tmp_path / "proj"
    first = run_cli("breaks", "model.py", "--format", "json", cwd=proj)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["summary"]["graph_breaks"] == 1

    (proj / "mypkg" / "unused.py").write_text('"""Edited."""\n\nVERSION = 2\n')
    again = run_cli("breaks", "model.py", "--format", "json", cwd=proj)
    assert "reusing the current report" in again.stderr  # nothing the compile traced changed

    layers = proj / "mypkg" / "layers.py"
    layers.write_text(layers.read_text().replace('        print("hidden", h.shape)  # breaks the graph\n', ""))
    fixed = run_cli("breaks", "model.py", "--format", "json", cwd=proj)
    assert fixed.returncode == 0, fixed.stderr
    assert "reusing" not in fixed.stderr
    assert json.loads(fixed.stdout)["summary"]["graph_breaks"] == 0


def test_traced_files_are_what_the_compile_traced(conformance):
    import torch.nn.modules.linear

    from tcinspect import cache

    rep = conformance("two_file").report
    names = {p.rsplit("/", 1)[-1] for p in cache.traced_files(rep)}
    assert "layers.py" in names and "unused.py" not in names and "model.py" not in names
    assert all(v.startswith("sha256 ") for v in cache.fingerprints(rep).values())
    # a file of an installed package is fingerprinted by the package's version
    from importlib.metadata import version

    assert cache.fingerprint(torch.nn.modules.linear.__file__) == f"dist torch {version('torch')}"
    transformers_files = cache.fingerprints(conformance("gpt2").report)
    assert transformers_files and all(v.startswith("dist transformers ") for v in transformers_files.values())


def test_a_second_capture_in_the_same_process_sees_the_edited_module(tmp_path):
    import sys

    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    shutil.copytree(MODELS / "two_file", tmp_path / "proj")
    layers = tmp_path / "proj" / "mypkg" / "layers.py"
    model = tmp_path / "proj" / "model.py"
    # another project's `mypkg` already imported in this process must not stand in for this one's
    sys.path.insert(0, str(MODELS / "two_file"))
    try:
        import mypkg.layers  # noqa: F401
    finally:
        sys.path.remove(str(MODELS / "two_file"))
    assert capture_file(model, compile=CompileOptions(backend="eager")).summary.graph_breaks == 1
    layers.write_text(layers.read_text().replace('        print("hidden", h.shape)  # breaks the graph\n', ""))
    assert capture_file(model, compile=CompileOptions(backend="eager")).summary.graph_breaks == 0
