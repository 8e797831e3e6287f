"""`tcinspect guards`: guard kinds, recompiles with the failed guard PyTorch reported, --dynamic."""

from __future__ import annotations

import json
import logging
import runpy

import pytest
import torch

from helpers import MODELS, SAMPLES
from tcinspect.analysis.guards import guard_checks, guards_document
from tcinspect.capturing.engine import capture_file
from tcinspect.cli import main
from tcinspect.parse.guards import suggest_recompile_fix
from tcinspect.report import CompileOptions


def oracle(sample: str, dynamic=None):
    """Run the sample under a counting backend, collecting PyTorch's own recompile messages."""
    graphs, messages = [], []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    ns = runpy.run_path(str(SAMPLES / sample))
    torch._dynamo.reset()
    torch._logging.set_logs(recompiles=True)
    handler = Collect()
    logger = logging.getLogger("torch._dynamo.guards.__recompiles")
    logger.addHandler(handler)
    try:
        compiled = torch.compile(ns["model"], backend=counting, dynamic=dynamic)
        for args in [ns["example_inputs"], *ns.get("input_sets", [])]:
            compiled(*args)
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()
        torch._dynamo.reset()
    return graphs, messages


def test_scalar_recompile_names_the_guard_and_the_input_set():
    rep = capture_file(SAMPLES / "recompile_scalar.py", compile=CompileOptions(backend="eager"))
    graphs, messages = oracle("recompile_scalar.py")
    assert rep.summary.graphs == len(graphs) == 2
    assert rep.summary.recompiles == len(messages) == 1
    (rc,) = rep.stages.dynamo.recompiles
    assert rc.input_set == 2  # input_sets[1], the one whose multiplier is 3.0
    assert "multiplier" in rc.reasons[0] and "2.0" in rc.reasons[0]
    assert rc.reasons[0].split("  #")[0].split(": ", 1)[1] in messages[0]  # the guard PyTorch reported
    assert "tensor" in rc.suggestion
    value = [c for g in rep.stages.dynamo.graphs[:1] for x in g.guards for c in guard_checks(x) if c[0] == "value"]
    assert any("L['multiplier'] == 2.0" in text for _, text in value)


def test_recompile_limit_is_detected():
    rep = capture_file(SAMPLES / "recompile_limit.py", compile=CompileOptions(backend="eager", dynamic="false"))
    graphs, _messages = oracle("recompile_limit.py", dynamic=False)
    assert rep.ok
    assert rep.summary.graphs == len(graphs) == 8
    hit = [r for r in rep.stages.dynamo.recompiles if r.limit_hit]
    assert len(hit) == 1 and rep.calls == 11
    assert guards_document(rep)["summary"]["limit_hit"] is True


def test_automatic_dynamic_stops_the_recompiles():
    rep = capture_file(SAMPLES / "recompile_limit.py", compile=CompileOptions(backend="eager"))
    graphs, messages = oracle("recompile_limit.py")
    assert rep.summary.graphs == len(graphs) == 2
    assert rep.summary.recompiles == len(messages) == 1
    assert not any(r.limit_hit for r in rep.stages.dynamo.recompiles)


@pytest.mark.parametrize("dynamic,graphs,recompiles", [("false", 8, 8), ("true", 1, 0)])
def test_dynamic_changes_guards_and_recompiles(dynamic, graphs, recompiles):
    # ten shapes: static compiles a graph per shape until the recompile limit (8); dynamic, one graph
    rep = capture_file(SAMPLES / "layer_norm_shapes.py", compile=CompileOptions(backend="eager", dynamic=dynamic))
    counted, _messages = oracle("layer_norm_shapes.py", dynamic=dynamic == "true")
    assert rep.summary.graphs == len(counted) == graphs
    assert rep.summary.recompiles == recompiles
    assert any(r.limit_hit for r in rep.stages.dynamo.recompiles) == (dynamic == "false")
    checks = [c for x in rep.stages.dynamo.graphs[0].guards for c in guard_checks(x)]
    if dynamic == "true":
        assert ("shape", "L['x'].size() == [None, None]") in checks
        assert ("symbolic_shape", "2 <= L['x'].size()[0]") in checks
    else:
        assert ("shape", "L['x'].size() == [8, 16]") in checks
        assert not any(kind == "symbolic_shape" for kind, _ in checks)


def test_tensor_match_is_split_into_dtype_device_shape():
    rep = capture_file(SAMPLES / "recompile_scalar.py", compile=CompileOptions(backend="eager"))
    tm = next(x for x in rep.stages.dynamo.graphs[0].guards if x.guard_type == "TENSOR_MATCH")
    checks = dict(guard_checks(tm))
    assert checks["dtype"] == "L['x'].dtype == torch.float32"
    assert checks["shape"] == "L['x'].size() == [4]"
    assert "requires_grad" in checks["attribute"]


def test_an_input_set_that_raises_is_reported_against_it(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\n\ndef model(x):\n    return x.sin()\n\n"
                     "example_inputs = (torch.randn(4),)\ninput_sets = [('not a tensor',), (torch.randn(4),)]\n")
    rep = capture_file(model, compile=CompileOptions(backend="eager"))
    assert [e.input_set for e in rep.input_errors] == [1]
    assert rep.calls == 3 and "AttributeError" in rep.input_errors[0].error


def test_cli_guards_table_and_json(capsys):
    code = main(["guards", str(SAMPLES / "recompile_scalar.py")])
    out, _ = capsys.readouterr()
    assert code == 0 and "3 calls · 2 compiles · 1 recompile" in out
    assert "input_sets[1]" in out and "multiplier" in out and "L['x'].dtype == torch.float32" in out
    code = main(["guards", str(SAMPLES / "recompile_scalar.py"), "--format", "json"])
    doc = json.loads(capsys.readouterr()[0])
    assert doc["summary"]["recompiles"] == 1 and doc["recompiles"][0]["input_set"] == 2
    assert doc["graphs"][0]["checks_by_kind"]["value"] >= 1


def test_input_sets_not_a_list_is_exit_2(capsys, tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\nmodel = torch.sin\nexample_inputs = (torch.randn(2),)\ninput_sets = 3\n")
    code = main(["guards", str(model)])
    assert code == 2 and "`input_sets` in" in capsys.readouterr()[1]


def test_a_global_state_recompile_names_the_setting_that_changed():
    """The global-state guard names its fields: allow_tf32 up to torch 2.14, cuda_matmul_precision from 2.15."""
    rep = capture_file(MODELS / "matmul_precision.py", compile=CompileOptions(backend="eager"))
    (recompile,) = rep.stages.dynamo.recompiles
    (reason,) = recompile.reasons
    assert reason.startswith("0/0: GLOBAL_STATE changed: ")
    field = "cuda_matmul_precision" if torch.__version__ >= "2.15" else "allow_tf32"
    assert field in reason
    assert recompile.suggestion.startswith("A matmul precision setting changed")
    # the grad-mode suggestion keeps its own cause, and a field tcinspect has no words for gets the general one
    assert suggest_recompile_fix(("0/1: GLOBAL_STATE changed: grad_mode cuda_matmul_precision",)).startswith("Grad mode")
    assert suggest_recompile_fix(("0/0: GLOBAL_STATE changed: default_dtype",)).startswith("A global torch setting")
