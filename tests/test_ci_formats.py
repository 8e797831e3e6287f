"""What CI reads must parse whatever a model's messages hold; what one `check` run judges, refused before anything
compiles; small command-line defects. Torch-free."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from builders.reports import make_report
from helpers import cli
from tcinspect.analysis.check.judge import Budgets
from tcinspect.analysis.check.limits import Limits
from tcinspect.analysis.check.outcome import Finding, Outcome
from tcinspect.analysis.check.plan import Plan, verdict
from tcinspect.errors import TcinspectError, UsageError
from tcinspect.render import checks as render


def _outcome(message: str, file: str = "models/a,b:c.py") -> Outcome:
    return Outcome([Finding("m.py", "graph_breaks", "fail", message, file, 3),
                    Finding("m.py", "kernels", "ok", "kernels 2 <= max 3")])


def test_junit_with_control_characters_parses():
    xml = render.junit(_outcome("the model printed \x1b[31mred\x1b[0m and a \x07 bell"))
    root = ET.fromstring(xml.split("\n", 1)[1])  # parses: no character XML cannot hold
    failure = root.find(".//failure")
    assert failure is not None and failure.get("message") == "the model printed \\x1b[31mred\\x1b[0m and a \\x07 bell"
    assert "\t" in render._xml_text("keeps\ttabs") and "\n" in render._xml_text("and\nnewlines")


def test_github_annotation_properties_are_escaped_as_the_actions_toolkit_does():
    line = render.github(_outcome("50% slower\nsee log")).splitlines()[0]
    assert line == ("::error file=models/a%2Cb%3Ac.py,line=3,title=tcinspect graph_breaks::50%25 slower%0Asee log")


def test_codegen_sort_typo_is_refused_without_bench(capsys, tmp_path):
    code, _, err = cli(capsys, "codegen", str(tmp_path / "missing.py"), "--sort", "bogus")
    assert code == 2 and "--sort 'bogus' is not one of" in err


@pytest.mark.parametrize(("files", "limits", "budgets", "baseline", "update", "refusal"), [
    ([], Limits(graphs=1), Budgets(), None, False, "no model files to check"),
    (["m.py"], Limits(), Budgets(), None, True, "--update needs a baseline path"),
    (["m.py"], Limits(), Budgets(compile_time_tolerance=10), None, False, "--compile-time-tolerance compares with"),
    (["m.py"], Limits(), Budgets(guard_latency_tolerance=10), None, False, "--guard-latency-tolerance compares with"),
    (["m.py"], Limits(), Budgets(expect_warm=True), None, False, "--expect-warm compares with"),
    (["m.py"], Limits(), Budgets(), None, False, "nothing to check"),
    (["m.py"], Limits(), Budgets(), Path("missing.yaml"), False, "baseline missing.yaml does not exist"),
])
def test_a_check_run_with_nothing_to_judge_is_refused_before_anything_compiles(tmp_path, monkeypatch, files, limits,
                                                                             budgets, baseline, update, refusal):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml at or above it
    with pytest.raises(TcinspectError) as info:
        Plan.of(files, limits, budgets, baseline, update, ranks=False, start=tmp_path)
    assert refusal in info.value.cause


def test_a_check_run_names_its_models_by_their_baseline_keys_and_measures_peaks_where_a_budget_asks(tmp_path):
    (tmp_path / "ci").mkdir()
    lock = tmp_path / "ci" / "lock.yaml"
    lock.write_text("schema_version: 1\nmodels:\n  ../a.py: {graphs: 1, graph_breaks: 0, recompiles: 0, kernels: 0, "
                    "peak_ratio: 1.2}\n  ../b.py: {graphs: 1, graph_breaks: 0, recompiles: 0, kernels: 0}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.tcinspect]\nmax_recompiles = 0\n[tool.tcinspect.model."b.py"]\n'
                                             'max_graphs = 2\n')
    files = [str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    plan = Plan.of(files, Limits(graph_breaks=0), Budgets(), lock, False, ranks=False, start=tmp_path)
    assert [(m.name, m.measure_memory) for m in plan.models] == [("../a.py", True), ("../b.py", False)]
    assert [(m.limits.graph_breaks, m.limits.recompiles, m.limits.graphs) for m in plan.models] == [(0, 0, None),
                                                                                                   (0, 0, 2)]
    assert plan.baseline is not None and set(plan.baseline) == {"../a.py", "../b.py"}
    assert Plan.of(files, Limits(), Budgets(), lock, True, ranks=False, start=tmp_path).baseline is None  # rewritten


def test_the_verdict_judges_each_model_before_the_next_report_is_asked_for(tmp_path):
    lock = tmp_path / "lock.yaml"
    lock.write_text("schema_version: 1\nmodels:\n  b.py: {graphs: 1, graph_breaks: 0, recompiles: 0, kernels: 0}\n")
    plan = Plan.of([str(tmp_path / "a.py"), str(tmp_path / "b.py")], Limits(), Budgets(), lock, False, ranks=False,
                   start=tmp_path)
    asked = []

    def reports(run):
        for model in run.models:
            asked.append(model.name)
            yield model, make_report()

    with pytest.raises(UsageError, match=r"a\.py is not in baseline"):
        verdict(plan, reports(plan))
    assert asked == ["a.py"]  # b.py was never compiled
    updating = Plan.of([str(tmp_path / "a.py")], Limits(), Budgets(), lock, True, ranks=False, start=tmp_path)
    result = verdict(updating, reports(updating))
    assert list(result.snapshots) == ["a.py"] and result.snapshots["a.py"]["graphs"] == 0
