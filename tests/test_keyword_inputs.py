"""Keyword inputs: `example_kwargs` beside `example_inputs`, `input_sets` entries as (args, kwargs)."""

from __future__ import annotations

import json

import pytest
import torch

from helpers import MODELS, cli
from tcinspect.capturing.engine import capture
from tcinspect.report import CompileOptions


def counting_oracle(model, calls):
    """torch's own count of the graphs a model makes over these (args, kwargs) calls."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, backend=counting)
        for args, kwargs in calls:
            compiled(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    return graphs


def test_bert_called_with_keywords_matches_torch(bert_kwargs_report):
    import runpy

    rep = bert_kwargs_report
    assert rep.ok and rep.calls == 2 and rep.target.input_sets == 1
    ns = runpy.run_path(str(MODELS / "bert_kwargs.py"))
    # a fresh config: the file's model already set problem_type on the capture's first call
    ns["model"].config.problem_type = None
    graphs = counting_oracle(ns["model"], [((), ns["example_kwargs"]), *ns["input_sets"]])
    assert rep.summary.graphs == len(graphs) == 2 and rep.summary.recompiles == 1
    # the keyword inputs reached the graph: `labels` feeds the loss, so the graph has its placeholder
    placeholders = [n.name for n in rep.stages.dynamo.graphs[0].graph.nodes if n.op == "placeholder"]
    assert any("labels" in p for p in placeholders) and any("input_ids" in p for p in placeholders)
    assert rep.stages.dynamo.recompiles[0].input_set == 1


def test_library_capture_takes_keywords_and_input_set_pairs():
    model = torch.nn.Linear(4, 2)
    rep = capture(model, example_kwargs={"input": torch.randn(3, 4)},
                  input_sets=[((), {"input": torch.randn(3, 4)}), {"input": torch.randn(5, 4)}],
                  compile=CompileOptions(backend="eager", backward=False))
    assert rep.ok and rep.calls == 3
    assert rep.summary.graphs == 2  # the third call's new batch size recompiles


def test_verify_compares_keyword_input_gradients(capsys):
    code, out, err = cli(capsys, "verify", str(MODELS / "kwargs_linear.py"), "--backend", "aot_eager", "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    names = [t["name"] for t in doc["verification"]["tensors"]]
    # `scale` is a keyword input that requires grad: its gradient is compared too
    assert names == ["output", "grad input[scale]", "grad linear.weight", "grad linear.bias"]
    assert doc["calls"] == 3


def test_export_takes_keyword_inputs_strict_and_non_strict(capsys):
    code, out, err = cli(capsys, "export", str(MODELS / "kwargs_linear.py"), "--dynamic-dim", "0", "-f", "json")
    assert code == 0, err
    runs = {e["mode"]: e for e in json.loads(out)["exports"]}
    for mode in ("strict", "non-strict"):
        assert runs[mode]["ok"] is True, runs[mode]["error"]
        assert runs[mode]["signature"]["user_inputs"] == ["x", "scale", "bias"]
        assert "input[scale]: {0: batch}" in runs[mode]["dynamic_shapes"]


@pytest.mark.parametrize(("name", "words"), [
    ("kwargs_bad.py", "`example_kwargs` in"),
    ("kwargs_bad_set.py", "is not an (args, kwargs) pair"),
])
def test_bad_keyword_inputs_are_one_line_and_exit_2(capsys, name, words):
    code, _, err = cli(capsys, "trace", str(MODELS / name), "--backend", "eager")
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unknown_keyword_is_the_models_own_error(capsys, tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\nmodel = torch.nn.Linear(4, 2)\nexample_kwargs = {'inptu': torch.randn(2, 4)}\n")
    code, _, err = cli(capsys, "trace", str(model), "--backend", "eager")
    assert code == 2 and "unexpected keyword argument 'inptu'" in err and len(err.strip().splitlines()) == 1
