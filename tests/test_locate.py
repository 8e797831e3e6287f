"""`verify` on a mismatch: where compiled results first depart (capturing/locate.py), on real passes and backends."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from helpers import SAMPLES, cli

pytestmark = pytest.mark.torch

SILU = SAMPLES / "silu_pass.py"
DROP = Path(__file__).resolve().parent / "models" / "drop_op_backend.py"


def _line_of(path: Path, fn_name: str, text: str, method: str = "") -> int:
    """The truth: the line of ``fn_name`` in ``path`` whose code contains ``text`` (the op the pass or backend edits)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_truth_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, fn_name)
    fn = getattr(fn, method) if method else fn
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.slow
def test_a_pass_that_swaps_an_op_is_located_at_its_node_and_user_line(capsys, inductor_cache):
    code, out, err = cli(capsys, "verify", str(SILU), "--pass", f"{SILU}:sigmoid_to_hardsigmoid", "-f", "json")
    assert code == 1, err
    d = json.loads(out)["verification"]["first_divergence"]
    # sigmoid_to_hardsigmoid changes the target of every aten.sigmoid node in place (name kept) to aten.hardsigmoid
    assert d["graph"] == "aot_forward_graph 0"
    assert d["node"].startswith("sigmoid") and d["op"] == "aten.hardsigmoid.default"
    assert d["line"].endswith(f"silu_pass.py:{_line_of(SILU, 'model', 'torch.sigmoid(')}")
    assert d["max_abs"] > 0 and d["rmse"] > 0 and d["stage"] == ""
    assert d["steps"][0]["ok"] is False and "node by node" in d["steps"][0]["what"] and d["seconds"] > 0


def test_the_terminal_names_the_node_and_no_locate_skips_it(capsys):
    args = ("verify", str(SILU), "--backend", "aot_eager", "--pass", f"{SILU}:sigmoid_to_hardsigmoid")
    code, out, _ = cli(capsys, *args)
    assert code == 1
    assert "first departs" in out and "node sigmoid (aten.hardsigmoid.default)" in out
    code, out, _ = cli(capsys, *args, "--no-locate", "-f", "json")
    assert code == 1 and json.loads(out)["verification"].get("first_divergence") is None


def test_a_backend_that_drops_an_op_is_located_at_the_dropped_node(capsys):
    code, out, err = cli(capsys, "verify", str(DROP), "--backend", f"{DROP}:drop_relu", "-f", "json")
    assert code == 1, err
    d = json.loads(out)["verification"]["first_divergence"]
    # drop_relu erases the torch.relu node of the Dynamo graph; its user (the mul) then departs
    assert d["graph"] == "dynamo_output_graph 0" and d["op"] == "relu" and "removed" in d["note"]
    line = f"drop_op_backend.py:{_line_of(DROP, 'Block', 'torch.relu(', 'forward')}"
    assert d["line"].endswith(line)
    # the HTML page shows it too
    from tcinspect import serialize
    from tcinspect.render.html import render

    page = render(serialize.from_dict(json.loads(out)))
    assert 'id="verification"' in page and "first departs" in page and line in page and d["node"] in page


def test_a_passing_model_names_nothing(capsys):
    code, out, err = cli(capsys, "verify", str(SILU), "--backend", "aot_eager", "--pass", f"{SILU}:rewrite_silu",
                         "-f", "json")
    assert code == 0, err
    assert json.loads(out)["verification"].get("first_divergence") is None


def test_the_budget_stops_the_search_with_what_it_ran():
    from tcinspect.capturing import locate
    from tcinspect.report import CompileOptions, Request, VerifyRequest

    request = Request(file=str(DROP), compile=CompileOptions(backend=f"{DROP}:drop_relu"), verify=VerifyRequest())
    d = locate.locate(request, budget_s=0)
    assert d.node == "" and "budget" in d.stopped and len(d.steps) == 1


@pytest.mark.slow
def test_with_no_node_departing_each_backend_stage_is_run_and_shown(inductor_cache):
    """The stage bisection on a model whose every stage matches eager: every step runs and says so."""
    import torch

    from tcinspect.capturing import locate
    from tcinspect.capturing.modelfile import Call
    from tcinspect.report import VerifyRequest

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    d = locate.locate_model(model, Call((torch.randn(4, 8),), {}), "inductor", (), VerifyRequest())
    assert [s.ok for s in d.steps] == [True] * 4 and d.stage == "" and d.node == ""
    assert [s.what for s in d.steps[1:]] == list(locate.STAGES)


def test_a_compiled_backward_that_differs_is_located_in_the_backward_graph(capsys):
    # the pass rewrites cos (sin's derivative) to sin only in the graph that takes tangents: outputs match eager,
    # gradients do not, and the node is the backward graph's, at the forward line whose derivative it is
    model = Path(__file__).resolve().parent / "models" / "backward_pass.py"
    code, out, err = cli(capsys, "verify", str(model), "--backend", "aot_eager", "--pass",
                         f"{model}:cos_to_sin_in_backward", "-f", "json")
    assert code == 1, err
    v = json.loads(out)["verification"]
    assert all(t["ok"] for t in v["tensors"] if not t["name"].startswith("grad"))
    d = v["first_divergence"]
    assert d["graph"] == "aot_backward_graph 0" and d["op"] == "aten.sin.default" and d["node"].startswith("cos")
    assert d["line"].endswith(f"backward_pass.py:{_line_of(model, 'Model', 'torch.sin(', 'forward')}")


@pytest.mark.gpu
def test_a_bf16_model_that_differs_within_the_rule_names_nothing_on_a_gpu(capsys):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = Path(__file__).resolve().parent / "models" / "bf16_mlp.py"
    code, out, err = cli(capsys, "verify", str(model), "-f", "json")
    assert code == 0, err
    v = json.loads(out)["verification"]
    # compiled and eager do differ (Inductor's fused bfloat16 math), within the rule: no false location
    assert v["ok"] and any(t["max_abs_error"] > 0 for t in v["tensors"])
    assert v.get("first_divergence") is None


LOWERING = Path(__file__).resolve().parent / "models" / "lowering_override.py"

#: torch's own CompilerBisector on the same model, in a process of its own (the model file replaces a lowering of
#: Inductor's for the whole process): each run compiles with torch.compile and compares with eager by allclose
_TORCH_BISECTS = """
import json, runpy, sys, torch
from torch._inductor.compiler_bisector import CompilerBisector
m = runpy.run_path(sys.argv[1])
model, (x,) = m["model"], m["example_inputs"]
ref = model(x)
def run():
    torch._dynamo.reset()
    return torch.allclose(torch.compile(model)(x), ref, rtol=1e-4, atol=1e-5)
r = CompilerBisector.do_bisect(run)
print(json.dumps([r.backend, r.subsystem, r.bisect_number, r.debug_info]))
"""


@pytest.mark.slow
def test_a_wrong_inductor_lowering_is_the_stage_and_torchs_bisector_names_its_node(capsys, inductor_cache, tmp_path):
    """No node departs (every graph runs aten.tanh), only Inductor does: the first failing stage is inductor, and
    torch's CompilerBisector's answer is torch's own, placed at the line of the node whose lowering it names."""
    import subprocess
    import sys

    code, out, err = cli(capsys, "verify", str(LOWERING), "--no-backward", "-f", "json")
    assert code == 1, err
    d = json.loads(out)["verification"]["first_divergence"]
    assert [s["ok"] for s in d["steps"][:4]] == [True, True, True, False]  # node by node, then the three stages
    assert d["stage"] == "inductor" and d["steps"][-1]["what"].startswith("torch's CompilerBisector")
    truth = subprocess.run([sys.executable, "-c", _TORCH_BISECTS, str(LOWERING)], capture_output=True, text=True,
                           check=True, env={**__import__("os").environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    backend, subsystem, number, debug_info = json.loads(truth.stdout.strip().splitlines()[-1])
    assert (backend, subsystem, number, debug_info) == ("inductor", "lowerings", d["bisect_number"], "tanh")
    assert (d["subsystem"], d["debug_info"]) == (subsystem, debug_info)
    assert d["node"] == "tanh" and d["op"] == "aten.tanh.default"
    assert d["line"].endswith(f"lowering_override.py:{_line_of(LOWERING, 'Gate', 'torch.tanh(', 'forward')}")
    from tcinspect import serialize
    from tcinspect.render.html import render

    page = render(serialize.from_dict(json.loads(out)))
    assert "backend stage inductor · lowerings #" in page and d["line"] in page


def test_the_timeout_ends_the_search_and_keeps_the_record(capsys):
    """The search runs in the capture's child, after the record: --timeout ends it there, and the verification the
    capture made is still the answer (exit 1, the mismatch), saying what stopped the search."""
    model = Path(__file__).resolve().parent / "models" / "hang_on_locate.py"
    code, out, err = cli(capsys, "verify", str(model), "--backend", f"{model}:drop_relu", "--timeout", "30",
                         "-f", "json")
    assert code == 1, err
    v = json.loads(out)["verification"]
    assert v["ok"] is False and any(not t["ok"] for t in v["tensors"])
    assert v["first_divergence"]["stopped"] == "--timeout 30 s ran out while locating where results first depart"
    assert "locating where compiled results first depart" in err
