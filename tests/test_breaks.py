"""`tcinspect breaks`: one real model per cause, counts checked against Dynamo's own events."""

from __future__ import annotations

import contextlib
import json
import logging

import pytest
import torch

from helpers import MODELS, SAMPLES, cli
from tcinspect.analysis.breaks import breaks_document, distinct_breaks
from tcinspect.capturing.engine import capture_file
from tcinspect.report import CompileOptions

BREAKS = MODELS / "breaks"


@contextlib.contextmanager
def count_break_events():
    """Oracle: an independent handler counting the graph-break events Dynamo emits."""
    seen = []

    class Counter(logging.Handler):
        def emit(self, record):
            md = getattr(record, "metadata", {}) or {}
            if md.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
                seen.append(md)

    handler = Counter()
    logger = logging.getLogger("torch.__trace")
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)


@pytest.mark.parametrize("name,break_type,fix_words", [
    ("print_call", "Failed to trace builtin operator", "reorderable_logging_functions"),
    ("data_dependent", "Data-dependent branching", "torch.cond"),
    ("sorted_tensors", "sort with non-constant keys", "torch.sort"),
    ("autograd_function", "autograd.Function", "torch.library"),
    ("third_party", "marked as skipped", "allow_in_graph"),
    ("item_call", "Tensor.item()", "capture_scalar_outputs"),
    ("explicit_break", "torch._dynamo.graph_break()", "graph_break()"),
])
def test_each_cause_has_its_type_line_and_fix(name, break_type, fix_words):
    path = BREAKS / f"{name}.py"
    with count_break_events() as events:
        rep = capture_file(path, compile=CompileOptions(backend="eager"))
    assert rep.summary.graph_breaks == len(events) >= 1
    first = rep.stages.dynamo.graph_breaks[0]
    assert break_type in first.break_type
    assert fix_words in first.fix
    src = path.read_text().splitlines()
    assert first.user_frame.file == str(path)
    assert src[first.user_frame.line - 1].strip() == first.user_frame.code
    assert first.context and any(n == first.user_frame.line for n, _ in first.context)


def test_distinct_breaks_group_repeats():
    # the sample breaks three times in one call; counted once each
    with count_break_events() as events:
        rep = capture_file(SAMPLES / "graph_breaks.py", compile=CompileOptions(backend="eager"))
    groups = distinct_breaks(rep)
    assert sum(d.count for d in groups) == len(events) == rep.summary.graph_breaks
    assert len(groups) == rep.summary.distinct_graph_breaks == 3


def test_definition_differs_from_explain():
    """explain() counts graphs - 1: a break Dynamo cannot resume from gives it -1; tcinspect says 1."""
    import runpy

    ns = runpy.run_path(str(BREAKS / "loop_break.py"))
    torch._dynamo.reset()
    explained = torch._dynamo.explain(ns["model"])(*ns["example_inputs"])
    torch._dynamo.reset()
    with count_break_events() as events:
        rep = capture_file(BREAKS / "loop_break.py", compile=CompileOptions(backend="eager"))
    assert explained.graph_break_count == explained.graph_count - 1
    assert rep.summary.graph_breaks == len(events) >= 1
    assert explained.graph_break_count != rep.summary.graph_breaks


def test_counters_miss_data_dependent_but_we_do_not():
    from torch._dynamo.utils import counters

    counters.clear()
    rep = capture_file(BREAKS / "data_dependent.py", compile=CompileOptions(backend="eager"))
    assert sum(counters["graph_break"].values()) == 0
    assert rep.summary.graph_breaks == 1


def test_cli_breaks_table_yaml_and_fullgraph(capsys):
    code, out, _err = cli(capsys, "breaks", str(SAMPLES / "graph_breaks.py"))
    assert code == 0
    assert "3 graph breaks (3 distinct)" in out and "graph_breaks.py:13" in out and "Suggested fix" in out
    assert "➤" in out  # the breaking line is marked in its source context
    code, out, _ = cli(capsys, "breaks", str(SAMPLES / "graph_breaks.py"), "--format", "json", "--fullgraph")
    assert code == 1
    doc = json.loads(out)
    assert doc["summary"]["compiles_with_fullgraph"] is False
    row = doc["breaks"][1]
    assert (row["type"], row["line"], row["function"], row["count"]) == ("Data-dependent branching", 13, "forward", 1)
    assert row["hints"] and row["reason"] == "" and row["gb_id"] == "GB0170"


def test_cli_no_breaks_says_so(capsys):
    code, out, _ = cli(capsys, "breaks", str(BREAKS / "no_breaks.py"), "--fullgraph")
    assert code == 0
    assert "0 graph breaks" in out and "No graph breaks" in out and "fullgraph=True: compiles" in out


def test_breaks_reuses_a_full_trace_and_needs_no_torch_on_a_report(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, _, _ = cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "aot_eager", "-o", str(report),
                     "--format", "json")
    assert code == 0
    code, from_report, _ = cli(capsys, "breaks", str(report), "--format", "yaml")
    assert code == 0 and "Data-dependent branching" in from_report
    code, from_model, _err = cli(capsys, "breaks", str(SAMPLES / "graph_breaks.py"), "--format", "yaml")
    assert code == 0 and from_model == from_report  # a Dynamo-only capture finds the same breaks


def test_breaks_document_fields(breaks_report):
    doc = breaks_document(breaks_report)
    assert set(doc["breaks"][0]) >= {"type", "file", "line", "function", "count", "reason", "hints", "fix"}
