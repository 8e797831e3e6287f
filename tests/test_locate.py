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
