"""Recompile and break advice that follows what the failed guard (or the skipped call) actually is,
script-mode call counts, and guard counts by kind that add up, on real models."""

from __future__ import annotations

import pytest

from helpers import MODELS, render_text
from tcinspect.analysis.guards import guard_kinds, guards_document
from tcinspect.parse.breaks import parse_break
from tcinspect.parse.guards import failed_guard, suggest_recompile_fix
from tcinspect.render.guards import guards as guards_view
from tcinspect.render.table import guards as trace_guards_view


def test_bert_setting_its_own_config_is_not_called_a_type_change(bert_kwargs_report):
    (rc,) = bert_kwargs_report.stages.dynamo.recompiles
    # torch's own reason: the guard on `self.config.problem_type is None` failed
    assert failed_guard(rc.reasons[0]) == "self.config.problem_type is None"
    assert "type or identity" not in rc.suggestion
    assert rc.suggestion.startswith("`self.config.problem_type` was None when the graph was compiled and is set now")


@pytest.fixture(scope="module")
def optimizer_script_report():
    from tcinspect.capturing.engine import capture_file

    return capture_file(MODELS / "optimizer_scheduler_script.py")


def test_an_optimizer_lr_guard_gets_the_tensor_lr_advice(optimizer_script_report):
    rep = optimizer_script_report
    lr = [r for r in rep.stages.dynamo.recompiles if "['lr']" in failed_guard(r.reasons[0])]
    assert lr, [r.reasons for r in rep.stages.dynamo.recompiles]
    assert "lr=torch.tensor(" in lr[0].suggestion


def test_a_script_counts_its_calls_and_names_the_one_that_recompiled(optimizer_script_report):
    rep = optimizer_script_report
    assert rep.target.kind == "script" and rep.calls == 3  # the script's STEPS calls of `step()`
    assert rep.stages.dynamo.recompiles
    # the second call: the scheduler had changed lr after the first
    assert all(rc.input_set == 1 for rc in rep.stages.dynamo.recompiles)
    out = render_text(guards_view(rep), 120)
    assert out.startswith(f"3 calls into compiled code · {len(rep.compiles)} compiles · ")
    assert "call 2" in out and "│ ?" not in out


def test_a_deliberately_skipped_optimizer_step_is_not_told_to_allow_in_graph(optimizer_script_report):
    skipped = [b for b in optimizer_script_report.stages.dynamo.graph_breaks if "intentionally marked" in b.explanation]
    assert skipped
    assert "allow_in_graph(fn)" not in skipped[0].fix and "on purpose" in skipped[0].fix


def test_skip_advice_from_torch_text():
    text_213 = ("Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call\n\n"
                "Attempted to call function marked as skipped\n"
                "  Explanation: Dynamo developers have intentionally marked that the function `Adam.step` in file "
                "`/x/site-packages/torch/optim/lr_scheduler.py` should not be traced.\n"
                "  Hint: Avoid calling the function `Adam.step`.\n")
    fix = parse_break(text_213, "0/0").fix
    assert "LR scheduler" in fix and "allow_in_graph(fn)" not in fix
    other = parse_break(text_213.replace("torch/optim/lr_scheduler.py", "numpy/core/x.py").replace("Adam.step", "f"),
                        "0/0").fix
    assert other.startswith("PyTorch does not trace `f` on purpose")


@pytest.mark.parametrize(("reason", "start"), [
    ("0/0: L['n'] == 3  # x", "The Python int `L['n']` changed value (3 when compiled)"),
    ("0/0: L['s'] == 2.5  # x", "The Python scalar `L['s']` changed value (2.5 when compiled)"),
    ("0/0: ___check_obj_id(L['self'].act, <id>)", "`L['self'].act` is another object"),
    ("0/0: ___check_type_id(L['x'], <id>)", "`L['x']` has another type"),
    ("0/0: L['mode'] == 'train'", "`L['mode']` changed value ('train' when compiled)"),
    ("0/0: len(L['xs']) == 3", "`L['xs']` changed length"),
    ("0/0: L['cache'] is not None", "`L['cache']` was set when the graph was compiled and is None now"),
])
def test_recompile_advice_reads_the_guard(reason, start):
    assert suggest_recompile_fix((reason,)).startswith(start)


def test_guard_kinds_sum_to_the_guards_and_every_view_agrees(bert_kwargs_report):
    rep = bert_kwargs_report
    trace_out, guards_out = render_text(trace_guards_view(rep), 120), render_text(guards_view(rep), 120)
    doc = guards_document(rep)
    for g, entry in zip(rep.stages.dynamo.graphs, doc["graphs"]):
        kinds = guard_kinds(g.guards)
        assert sum(n for _, n in kinds) == len(g.guards) == entry["guards"]
        assert sum(entry["guards_by_kind"].values()) == len(g.guards)
        kinds_text = ", ".join(f"{k} {n}" for k, n in kinds)
        # the trace view and the guards view print the same counts
        assert f"{g.compile_id} · {g.function} · {len(g.guards)} guards ({kinds_text})" in guards_out.replace("\n", "")
        assert f"guards {g.compile_id} · {g.function} · {len(g.guards)} ({kinds_text})" in trace_out.replace("\n", "")
    assert sum(len(g.guards) for g in rep.stages.dynamo.graphs) <= rep.summary.guards
