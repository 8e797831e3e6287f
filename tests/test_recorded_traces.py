"""Structured traces recorded on a CPU with torch 2.13.0, 2.14.1 and 2.15.0, parsed with whatever torch
is installed (or none): the parse against torch's own counts from the same run (tests/data/record_traces.py)."""

from __future__ import annotations

import gzip
import json
from functools import cache

import pytest

from builders.reports import make_report
from helpers import DATA, cli, launched, render_text
from tcinspect import serialize
from tcinspect.parse import assemble, events
from tcinspect.report import EventCount, ParseHealth, Report, Target

TRACES = DATA / "cpu-traces"
VERSIONS = sorted(p.name for p in TRACES.iterdir() if (p / "expected.json").exists())
EXPECTED = {v: json.loads((TRACES / v / "expected.json").read_text()) for v in VERSIONS}
CASES = [(v, m) for v in VERSIONS for m in EXPECTED[v]["models"]]
MODELS = sorted({m for _, m in CASES})


@cache
def report_of(version: str, model: str) -> Report:
    evs, bad = events.read_trace(TRACES / version / f"{model}.jsonl.gz")
    stages, metrics = assemble.build(evs)
    return make_report(torch_version=EXPECTED[version]["torch"], target=Target(kind="trace", model_name=model),
                       stages=stages, compiles=metrics, parse=events.parse_health(evs, bad))


def test_every_supported_cpu_version_is_recorded():
    assert {"2.13.0", "2.14.1", "2.15.0"} <= set(VERSIONS)
    assert all(set(EXPECTED[v]["models"]) == set(MODELS) for v in VERSIONS)
    assert {EXPECTED[v]["triton"] for v in VERSIONS} == {"3.6.0", "3.8.0", "3.9.0"}


@pytest.mark.parametrize("version,model", CASES)
def test_parse_equals_torchs_own_counts(version, model):
    rep, want = report_of(version, model), EXPECTED[version]["models"][model]
    s = rep.summary
    assert s.graphs == want["graphs"]  # calls to a counting backend
    assert [g.compile_id for g in rep.stages.dynamo.graphs] == want["compile_ids"]
    assert s.graph_breaks == want["graph_breaks"] >= want["graph_break_counter"]  # the counter misses some
    assert s.recompiles == want["recompiles"]
    assert len(rep.stages.inductor.outputs) == want["inductor_outputs"]  # run_and_get_code's output code
    assert sorted(k.name for o in rep.stages.inductor.outputs for k in o.kernels) == want["kernels"]
    assert rep.parse is None  # every event of a supported torch is known


@pytest.mark.parametrize("version,model", CASES)
def test_invariants(version, model):
    rep = report_of(version, model)
    assert rep.stages.inductor.outputs
    for out in rep.stages.inductor.outputs:
        assert [k.name for k in out.kernels] == launched(out.wrapper)  # in launch order
        assert out.post_grad_graph is not None and out.cache == "miss"  # recorded cold
        # recorded without provenance tracking: Inductor stated no kernel's nodes, so none is read from the
        # wrapper's "Source Nodes" comments (on the tracked recordings those equal Inductor's own mapping for
        # 15 of 187 kernels, docs/codegen.md); each output says why and what fixes it
        assert all(k.provenance == "unknown" and not k.source_nodes and not k.user_lines for k in out.kernels)
        assert "INDUCTOR_PROVENANCE=1" in out.unknown_provenance
    for g in rep.stages.dynamo.graphs:
        assert g.guards and any(x.guard_type == "TENSOR_MATCH" for x in g.guards)
        # every guard type torch names is one guards.py classifies (only free-form lambdas may be "other")
        assert {x.guard_type for x in g.guards if x.kind == "other"} <= {"LAMBDA_GUARD"}
    for aot in rep.stages.aot_autograd.graphs:
        if aot.forward is not None:
            outputs = next(n for n in aot.forward.nodes if n.op == "output").args
            assert aot.backward is not None and all(s in outputs for s in aot.forward.saved_for_backward)
    for r in rep.stages.dynamo.recompiles:
        assert r.reasons and r.suggestion
    assert {m.compile_id for m in rep.compiles} >= {g.compile_id for g in rep.stages.dynamo.graphs}


@pytest.mark.parametrize("model", MODELS)
def test_the_same_model_reads_the_same_on_every_version(model):
    def shape(rep: Report):
        s = rep.summary
        return (s.graphs, s.graph_breaks, s.distinct_graph_breaks, s.recompiles, s.aot_graphs, s.kernels,
                [(b.break_type, b.user_frame.line if b.user_frame else 0) for b in rep.stages.dynamo.graph_breaks],
                [r.suggestion for r in rep.stages.dynamo.recompiles])

    # kernel names and guard counts may change with torch (2.14 fuses GPT-2's position ids differently,
    # 2.15 adds DICT_CONTAINS guards); the counts below do not
    first = shape(report_of(VERSIONS[0], model))
    assert VERSIONS[1:], "one version alone compares nothing"
    for v in VERSIONS[1:]:
        assert shape(report_of(v, model)) == first, v


def test_guard_kinds_agree_across_versions_where_torch_renamed_a_guard():
    """2.13 writes an aliasing check as a LAMBDA_GUARD, 2.14 as OBJECT_ALIASING: both are identity guards."""
    def kinds(v):
        return {(x.kind, x.expression) for g in report_of(v, "gpt2_tiny").stages.dynamo.graphs for x in g.guards
                if x.guard_type in ("LAMBDA_GUARD", "OBJECT_ALIASING") and " is " in x.expression}
    old, new = kinds("2.13.0"), kinds("2.14.1")
    assert old == new and len(old) >= 10 and {k for k, _ in old} == {"identity"}


def _with_extra_lines(tmp_path, *lines: str):
    path = tmp_path / "trace.jsonl"
    with gzip.open(TRACES / "2.15.0" / "tiny.jsonl.gz", "rt") as fh:
        path.write_text(fh.read() + "".join(line + "\n" for line in lines))
    return path


def test_an_unknown_event_is_counted_not_dropped(tmp_path):
    new = {"meta": {"artifact": {"name": "a_new_torch_event", "encoding": "string"}, "frame_id": 0,
                    "frame_compile_id": 0, "attempt": 0}, "payload": "what a newer torch logs"}
    path = _with_extra_lines(tmp_path, json.dumps(new), json.dumps(new), '{"meta": {"cut short')
    evs, bad = events.read_trace(path)
    assert [e.payload for e in evs if e.name == "a_new_torch_event"] == ["what a newer torch logs"] * 2
    health = events.parse_health(evs, bad)
    assert health == ParseHealth(unknown_events=(EventCount("a_new_torch_event", 2),), lines_not_understood=1)
    # the rest of the parse is unchanged by the lines it did not understand
    assert assemble.build(evs) == assemble.build(events.read_trace(TRACES / "2.15.0" / "tiny.jsonl.gz")[0])
    rep = report_of("2.15.0", "tiny").replace(parse=health)
    data = serialize.to_dict(rep)
    assert data["parse"] == {"unknown_events": [{"name": "a_new_torch_event", "count": 2}], "lines_not_understood": 1}
    assert serialize.loads(serialize.dumps(rep, "yaml")).parse == health


def test_a_report_without_parse_trouble_has_no_parse_section():
    rep = report_of("2.13.0", "tiny")
    assert rep.parse is None and "parse" not in serialize.to_dict(rep)


def test_2_15s_new_runtime_wrappers_event_is_what_the_section_catches(monkeypatch):
    """Before tcinspect knew it, 2.15's aot_autograd_runtime_wrappers would have been reported."""
    path = TRACES / "2.15.0" / "tiny.jsonl.gz"
    evs, _ = events.read_trace(path)
    n = sum(1 for e in evs if e.name == "aot_autograd_runtime_wrappers")
    monkeypatch.setattr(events, "KNOWN_UNREAD", events.KNOWN_UNREAD - {"aot_autograd_runtime_wrappers"})
    assert n >= 1 and events.parse_health(evs) == ParseHealth((EventCount("aot_autograd_runtime_wrappers", n),))


def test_the_summary_warns_in_one_line(tmp_path):

    from tcinspect.render.table import summary

    rep = report_of("2.15.0", "tiny").replace(parse=ParseHealth((EventCount("a_new_torch_event", 2),), 1))
    lines = [ln for ln in render_text(summary(rep), 300).splitlines() if ln.startswith("parse:")]
    assert lines == ["parse: 2 structured-trace events tcinspect does not know (a_new_torch_event ×2): torch "
                     f"{rep.torch_version} may record something this tcinspect does not read; 1 lines of the events "
                     "file were not a record"]


@pytest.mark.torch
def test_a_live_capture_keeps_and_counts_an_event_it_does_not_know(capsys):
    backend = f"{DATA.parent / 'models' / 'backends.py'}:logs_an_unknown_event"
    code, out, err = cli(capsys, "trace", str(DATA.parent.parent / "sample_models" / "tiny.py"), "--backend", backend,
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parse"] == {"unknown_events": [{"name": "tcinspect_test_unknown_event", "count": 1}],
                            "lines_not_understood": 0}
    code, out, err = cli(capsys, "trace", str(DATA.parent.parent / "sample_models" / "tiny.py"), "--backend", backend,
                         "--stage", "summary")
    assert code == 0
    assert "parse: 1 structured-trace events tcinspect does not know (tcinspect_test_unknown_event ×1)" in out
