"""`breaks --try-fixes`: each config fix a report's breaks suggest, tried in a capture of its own and judged against
the report. The figures before and after are the reports' own (Summary and Coverage, which equal torch's counters:
tests/test_conformance.py), never numbers written here; torch's reason for a fix that does not help is the trial
report's own break at that line."""

from __future__ import annotations

import difflib
import json
from dataclasses import replace

import pytest

from builders.reports import make_report
from helpers import MODELS, ROOT, cli, render_text
from tcinspect import serialize
from tcinspect.analysis import fixes
from tcinspect.analysis.fixes import NOT_VERIFIED, ConfigFix, Figures, FixTrial
from tcinspect.errors import ExitCode
from tcinspect.report import (
    BackendFailure,
    CompileOptions,
    Coverage,
    DynamoStage,
    FrameCoverage,
    GraphBreak,
    Request,
    SourceLocation,
    Stages,
)

ITEM = MODELS / "breaks" / "item_call.py"
#: tests/conformance_models/nanogpt.py with print(x.shape) in GPT.forward's block loop
PRINT = MODELS / "nanogpt_print.py"


# ---------------------------------------------------------------------------------------------- no torch


def _break(**fields) -> GraphBreak:
    base = {"compile_id": "0/0", "user_frame": SourceLocation("m.py", 5, "model", "y = x.item()"),
            "break_type": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "gb_id": "GB0124"}
    return GraphBreak(**{**base, **fields})


def test_the_settings_come_from_the_fix_torchs_hints_and_the_users_line():
    item = _break(hints=("Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
                         "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.",))
    assert fixes.settings_for(item) == [("capture_scalar_outputs", "True")]
    shown = _break(break_type="Failed to trace builtin operator", gb_id="GB0059",
                   explanation="Dynamo does not know how to trace builtin operator `print` with argument types ['Size']",
                   hints=("If you are attempting to call a logging function (e.g. `print`), you can try adding it to "
                          "`torch._dynamo.config.reorderable_logging_functions`.",))
    assert fixes.settings_for(shown) == [("reorderable_logging_functions", "print")]
    logged = _break(break_type="logging.Logger method not supported for non-export cases", gb_id="GB0291",
                    user_frame=SourceLocation("m.py", 7, "model", 'log.info("y %s", y.shape)'),
                    fix="add the function to torch._dynamo.config.reorderable_logging_functions")
    assert fixes.settings_for(logged) == [("reorderable_logging_functions", "logging.Logger.info")]
    # a break inside a function the compiled frame called; a resumed frame is the function it resumes
    inner = _break(break_type="Call to `torch._dynamo.graph_break()`", gb_id="GB0025",
                   user_frame=SourceLocation("m.py", 5, "helper", "torch._dynamo.graph_break()"))
    frame = FrameCoverage("0/0", "model", "m.py", 8, 2)
    assert fixes.settings_for(inner, frame) == [("nested_graph_breaks", "True")]
    assert fixes.settings_for(inner, replace(frame, function="torch_dynamo_resume_in_helper_at_5")) == []
    branch = _break(break_type="Data-dependent branching", gb_id="GB0170",
                    fix="Make the branch tensor-valued: torch.where(cond, a, b)")
    assert fixes.settings_for(branch) == []


def test_candidates_are_each_setting_once_with_the_places_it_should_clear():
    item = _break(fix="set torch._dynamo.config.capture_scalar_outputs = True")
    again = replace(item, compile_id="1/0", user_frame=SourceLocation("m.py", 9, "model", "z = y.item()"))
    failed = BackendFailure("2/0", "model", "m.py", 12, "DynamicOutputShapeException: aten.nonzero.default",
                            user_frame=SourceLocation("m.py", 13, "model", "i = x.nonzero()"))
    rep = make_report(stages=Stages(dynamo=DynamoStage(graph_breaks=(item, again, item),
                                                       backend_failures=(failed,))))
    assert fixes.candidates(rep) == (ConfigFix("capture_scalar_outputs", "True", ("m.py:5", "m.py:9")),
                                     ConfigFix("capture_dynamic_output_shape_ops", "True", ("m.py:13",)))


def _figures_report(breaks: int, eager: int, calls: int, ok: bool = True):
    from tcinspect.report import Verification

    brk = _break()
    frames = tuple(FrameCoverage(f"{i}/0", "model", "m.py", 1, 0, eager=True) for i in range(eager))
    return make_report(stages=Stages(dynamo=DynamoStage(graph_breaks=(brk,) * breaks)),
                       coverage=Coverage("counters", calls, 1, eager, frames=frames), verification=Verification(ok))


@pytest.mark.parametrize("after, verdict", [
    ((0, 0, 4, True), "helps"),
    ((1, 0, 3, True), "no effect"),
    ((0, 0, 4, False), "mixed"),  # the break went, and the outputs changed
    ((2, 0, 3, True), "worse"),
    ((1, 1, 3, True), "worse"),
])
def test_a_trial_is_judged_by_the_reports_counts_and_the_eager_comparison(after, verdict):
    before = _figures_report(1, 0, 3)
    now = _figures_report(*after)
    trial = fixes.judge(before, ConfigFix("capture_scalar_outputs", "True", ("m.py:5",)), now)
    assert trial.verdict == verdict and trial.verified == (verdict == "helps")
    assert (trial.before, trial.after) == (Figures.of(before), Figures.of(now))
    assert trial.reason == ("GB0124: Unsupported Tensor.item() call with capture_scalar_outputs=False"
                            if after[0] else "")
    failed = fixes.judge(before, trial.fix, error="the model raised")
    assert (failed.verdict, failed.after, failed.error) == ("error", None, "the model raised")


def test_without_try_fixes_every_suggestion_reads_not_verified():
    rep = make_report(stages=Stages(dynamo=DynamoStage(graph_breaks=(
        _break(fix="set torch._dynamo.config.capture_scalar_outputs = True"),
        _break(user_frame=SourceLocation("m.py", 9, "model"), break_type="Data-dependent branching", fix="torch.where"),
    ))))
    from tcinspect.analysis.breaks import breaks_document

    doc = breaks_document(rep)
    assert [(r["fix_verified"], r["fix_status"]) for r in doc["breaks"]] == [(False, NOT_VERIFIED),
                                                                            (False, fixes.CODE_CHANGE)]
    assert "fixes" not in doc
    from tcinspect.render.fixes import fixes_view

    text = render_text(fixes_view(rep, None))
    assert NOT_VERIFIED in text and "capture_scalar_outputs=True" in text and "break 2" in text


def test_the_print_model_is_nanogpt_plus_one_print_line():
    def code(path):  # past the module docstring
        return path.read_text().split('"""', 2)[2].splitlines()

    nanogpt = code(ROOT / "tests" / "conformance_models" / "nanogpt.py")
    changed = [ln for ln in difflib.ndiff(nanogpt, code(PRINT)) if ln.startswith(("+ ", "- "))]
    assert changed == ["+             print(x.shape)"]


@pytest.mark.parametrize("what", ["report", "log", "script", "none"])
def test_try_fixes_needs_a_model_file_one_line_and_exit_2(what, tmp_path, capsys):
    saved = tmp_path / "saved.yaml"
    saved.write_text(serialize.dumps(make_report(), "yaml"))
    log = ROOT / "tests/data/torch_trace/torch-2.11.0-cuda/collectives_ranks-nproc2"
    log = next(p for p in sorted(log.iterdir()) if p.name.endswith(".log.gz"))
    file = {"report": [str(saved)], "log": [str(log)], "script": [str(MODELS / "script_mode.py")], "none": []}[what]
    code, out, err = cli(capsys, "breaks", *file, "--try-fixes")
    assert code == ExitCode.USAGE_ERROR
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcinspect: error: --try-fixes re-runs a model")
    assert " — " in lines[0]  # the cause, then the fix


# ---------------------------------------------------------------------------------------------- torch


def _before(path):
    from tcinspect.request import obtain

    request = Request(file=str(path), compile=CompileOptions(backend="eager"), isolate=False)
    return request, obtain(request)


@pytest.fixture(scope="module")
def item_trial():
    """The .item() model's report, its one candidate, and that candidate's trial report (a child process)."""
    from tcinspect.capturing import tryfix

    request, before = _before(ITEM)
    (fix,) = fixes.candidates(before)
    return before, fix, tryfix.run(request, before, fix.setting)


@pytest.mark.torch
def test_capture_scalar_outputs_removes_the_item_break_and_outputs_match(item_trial):
    before, fix, after = item_trial
    (brk,) = before.stages.dynamo.graph_breaks
    assert fix == ConfigFix("capture_scalar_outputs", "True", (fixes.place(brk.user_frame),))
    assert after.options.dynamo_config == ("capture_scalar_outputs=True",) and after.options.verify
    trial = fixes.judge(before, fix, after)
    # the report's own counts: Summary for breaks and recompiles, Coverage (torch's counters) for the rest
    assert trial.before == Figures(before.summary.graph_breaks, before.coverage.calls_captured,
                                   before.coverage.fallbacks_to_eager, before.summary.recompiles)
    assert trial.after == Figures(after.summary.graph_breaks, after.coverage.calls_captured,
                                  after.coverage.fallbacks_to_eager, after.summary.recompiles)
    assert after.summary.graph_breaks < before.summary.graph_breaks  # measured, then judged
    assert after.coverage.calls_captured > before.coverage.calls_captured  # .item() is in the graph now
    assert trial.outputs_match_eager is after.verification.ok is True
    assert trial.verdict == "helps" and trial.verified and trial.reason == ""


@pytest.mark.torch
def test_cli_try_fixes_reports_the_trial_and_changes_nothing_of_the_users(item_trial, tmp_path, capsys, monkeypatch):
    import torch

    before, _, after = item_trial
    inductor = tmp_path / "inductor"
    inductor.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    cache_dir = tmp_path / "tcinspect-cache"
    code, out, err = cli(capsys, "breaks", str(ITEM), "--try-fixes", "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    (row,), (shown,) = doc["fixes"], doc["breaks"]
    assert row == {
        "config": "capture_scalar_outputs", "value": "True", "verified": True, "verdict": "helps",
        "breaks_before": before.summary.graph_breaks, "breaks_after": after.summary.graph_breaks,
        "calls_captured_before": before.coverage.calls_captured, "calls_captured_after": after.coverage.calls_captured,
        "fallbacks_to_eager_before": before.coverage.fallbacks_to_eager,
        "fallbacks_to_eager_after": after.coverage.fallbacks_to_eager,
        "recompiles_before": before.summary.recompiles, "recompiles_after": after.summary.recompiles,
        "outputs_match_eager": True, "error": "", "reason": "", "places": [f"{shown['file']}:{shown['line']}"]}
    assert [(b["fix_verified"], b["fix_status"]) for b in doc["breaks"]] == [
        (True, "verified: capture_scalar_outputs=True removes it (outputs match eager)")]
    assert "tried 1 config fix" in err
    # the user's process keeps its config; the trial wrote nothing to the user's Inductor cache, and only the
    # breaks capture itself is in the report cache
    assert torch._dynamo.config.capture_scalar_outputs is False
    assert list(inductor.iterdir()) == []
    stored = [json.loads(p.read_text())["options"] for p in cache_dir.glob("*.json")]
    assert [o["dynamo_config"] for o in stored] == [[]]


@pytest.mark.torch
def test_reorderable_logging_does_not_fix_a_print_of_a_shape_in_nanogpt(capsys):
    from tcinspect.capturing import tryfix

    request, before = _before(PRINT)
    line = next(i for i, text in enumerate(PRINT.read_text().splitlines(), 1) if text.strip() == "print(x.shape)")
    place = next(fixes.place(b.user_frame) for b in before.stages.dynamo.graph_breaks
                 if b.user_frame is not None and b.user_frame.line == line)
    fix = ConfigFix("reorderable_logging_functions", "print", (place,))
    assert fix in fixes.candidates(before)
    after = tryfix.run(request, before, fix.setting)
    trial = fixes.judge(before, fix, after)
    assert trial.after == Figures.of(after) and trial.before == Figures.of(before)
    assert trial.after.calls_captured == after.coverage.calls_captured
    assert trial.after.fallbacks_to_eager == after.coverage.fallbacks_to_eager
    assert not trial.verified and trial.verdict in ("no effect", "worse")
    # torch's reason is the trial's own break at the print, not the break the report had there
    still = [b for b in after.stages.dynamo.graph_breaks if b.user_frame is not None and b.user_frame.line == line]
    was = [b for b in before.stages.dynamo.graph_breaks if b.user_frame is not None and b.user_frame.line == line]
    assert still and was and still[0].gb_id != was[0].gb_id
    assert trial.reason == f"{still[0].gb_id}: {still[0].break_type}"
    assert "reorder" in trial.reason  # GB0296: the arguments (a torch.Size) cannot be reordered
    assert trial.outputs_match_eager is after.verification.ok
    from tcinspect.render.fixes import fixes_view

    text = render_text(fixes_view(before, [trial]))
    assert "reorderable_logging_functions=print" in text and trial.verdict in text and trial.reason in text
    assert f"{before.summary.graph_breaks} -> {after.summary.graph_breaks}" in text


@pytest.mark.torch
def test_a_setting_is_applied_for_its_capture_alone_and_an_unknown_one_is_refused():
    import torch

    from tcinspect.capturing._compat.dynamo import dynamo_config
    from tcinspect.errors import DynamoConfigError

    config = torch._dynamo.config
    was = (config.capture_scalar_outputs, set(config.reorderable_logging_functions))
    with dynamo_config(["capture_scalar_outputs=True", "reorderable_logging_functions=print,warnings.warn"]):
        assert config.capture_scalar_outputs is True
        assert {print, __import__("warnings").warn} <= config.reorderable_logging_functions
    assert (config.capture_scalar_outputs, config.reorderable_logging_functions) == was
    for bad in ("no_such_setting_here=True", "capture_scalar_outputs=maybe", "capture_scalar_outputs",
                "reorderable_logging_functions=no_module_here.f"):
        with pytest.raises(DynamoConfigError), dynamo_config([bad]):
            pass


def test_a_trial_that_could_not_run_says_why_in_every_view():
    rep = make_report(stages=Stages(dynamo=DynamoStage(graph_breaks=(_break(fix="torch._dynamo.config"
                                                                              ".capture_scalar_outputs = True"),))))
    fix = fixes.candidates(rep)[0]
    trial = fixes.judge(rep, fix, error="torch 2.11.0 has no torch._dynamo.config.x — leave it out", tried=False)
    assert isinstance(trial, FixTrial) and trial.verdict == "not tried"
    from tcinspect.analysis.breaks import breaks_document

    doc = breaks_document(rep, trials=[trial])
    assert doc["fixes"][0]["error"] == trial.error and doc["fixes"][0]["breaks_after"] is None
    assert doc["breaks"][0]["fix_status"].startswith("tried, does not fix it: capture_scalar_outputs=True (not tried")
    from tcinspect.render.fixes import fixes_view

    assert "has no torch._dynamo.config.x" in render_text(fixes_view(rep, [trial]))


def test_dynamo_config_is_refused_with_nproc_ranks(tmp_path):
    from tcinspect.errors import UsageError
    from tcinspect.request import obtain

    model = tmp_path / "m.py"
    model.write_text("model = print\nexample_inputs = ()\n")
    with pytest.raises(UsageError, match="not to --nproc ranks"):
        obtain(Request(file=str(model), compile=CompileOptions(dynamo_config=("capture_scalar_outputs=True",)),
                       nproc=2))
