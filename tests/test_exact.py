"""Counts equal torch's on real models where they used to drift: in-place operator nodes, graphs the backend
failed on (run eagerly, "WON'T CONVERT" in torch's log), and reports reused for options they were not
recorded with.

The backend-failure tests parse a recorded Inductor run of Hugging Face Longformer
(tests/data/record_backend_failure.py, torch 2.13.0) against what a counting backend around Inductor saw
in the same run; the rest run tiny models in this process.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from conformance import break_type_counts, not_in_counter
from helpers import render_text
from tcinspect.parse import events, fromevents
from tcinspect.parse.fxgraph import parse_graph
from tcinspect.report import CompileOptions, Options, Report, Target

DATA = Path(__file__).resolve().parent / "data"
LONGFORMER = DATA / "backend-failure-longformer-torch2.13.0-cpu"

# A residual block as Dynamo printed it (torch 2.13.0, `print_readable` of the graph a counting backend was
# handed; y_2's annotation as the structured trace writes it, with strides and device): `y += sc`, `y /= 2`,
# `y[0] = 1.0`, `y[:, 1] += 3`. torch's graph has 12 call nodes.
IN_PLACE_GRAPH = '''class GraphModule(torch.nn.Module):
    def forward(self, L_w_: "f32[4, 4, 3, 3]", L_x_: "f32[2, 4, 8, 8]", L_n_: "i64[]"):
        l_w_ = L_w_
        l_x_ = L_x_
        l_n_ = L_n_

        # File: /tmp/block.py:8 in forward, code: y = torch.relu(s.bn(s.c1(x)))
        conv2d: "f32[2, 4, 8, 8]" = torch.conv2d(l_x_, l_w_, None, (1, 1), (1, 1), (1, 1), 1)
        add_: "i64[]" = l_n_.add_(1);  l_n_ = add_ = None
        batch_norm: "f32[2, 4, 8, 8]" = torch.nn.functional.batch_norm(conv2d, None, None, None, None, True, 0.1, 1e-05);  conv2d = None
        y: "f32[2, 4, 8, 8]" = torch.relu(batch_norm);  batch_norm = None
        y_1: "f32[2, 4, 8, 8]" = torch.conv2d(y, l_w_, None, (1, 1), (1, 1), (1, 1), 1);  y = l_w_ = None

        # File: /tmp/block.py:10 in forward, code: y += sc
        y_1 += l_x_;  y_2: "f32[2, 4, 8, 8][256, 64, 8, 1]cpu" = y_1;  y_1 = l_x_ = None

        # File: /tmp/block.py:11 in forward, code: y /= 2
        y_2 /= 2;  y_3: "f32[2, 4, 8, 8]" = y_2;  y_2 = None

        # File: /tmp/block.py:12 in forward, code: y[0] = 1.0
        y_3[0] = 1.0;  setitem = y_3;  setitem = None

        # File: /tmp/block.py:13 in forward, code: y[:, 1] += 3
        getitem: "f32[2, 8, 8]" = y_3[(slice(None, None, None), 1)]
        getitem += 3;  iadd_1: "f32[2, 8, 8]" = getitem;  getitem = None
        y_3[(slice(None, None, None), 1)] = iadd_1;  setitem_1 = y_3;  iadd_1 = setitem_1 = None

        # File: /tmp/block.py:14 in forward, code: return y.relu_()
        relu_: "f32[2, 4, 8, 8]" = y_3.relu_();  y_3 = None
        return (relu_,)
'''


def test_in_place_operator_lines_are_nodes():
    g = parse_graph("dynamo_output_graph", IN_PLACE_GRAPH)
    calls = [(n.name, n.target) for n in g.nodes if n.op.startswith("call")]
    assert g.op_count == 12 == len(calls)
    assert calls[5:11] == [("y_2", "operator.iadd"), ("y_3", "operator.itruediv"), ("setitem", "operator.setitem"),
                           ("getitem", "operator.getitem"), ("iadd_1", "operator.iadd"),
                           ("setitem_1", "operator.setitem")]
    y_2 = next(n for n in g.nodes if n.name == "y_2")
    assert (y_2.args, y_2.shape, y_2.source.line, y_2.source.code) == ("y_1, l_x_", ("2", "4", "8", "8"), 10, "y += sc")
    setitem_1 = next(n for n in g.nodes if n.name == "setitem_1")
    assert setitem_1.args == "y_3, (slice(None, None, None), 1), iadd_1" and setitem_1.source.line == 13


@cache
def longformer() -> tuple[Report, dict]:
    evs, _ = events.read_trace(Path(f"{LONGFORMER}.jsonl.gz"))
    rep = fromevents.report_from_events(evs, target=Target(kind="model", path="longformer.py"),
                                        options=Options(backend="inductor"), device="cpu", torch_version="2.13.0")
    return rep, json.loads(Path(f"{LONGFORMER}.truth.json").read_text())


def test_graphs_the_backend_failed_on_are_counted_apart():
    rep, truth = longformer()
    handed, failed = truth["handed"], [h for h in truth["handed"] if h["error"]]
    assert (len(handed), len(failed)) == (18, 10)  # what the recording saw
    s = rep.summary
    # graphs: those the backend compiled; the ones it failed on (run eagerly) apart
    assert s.graphs == truth["unique_graphs"] == len(handed) - len(failed) == 8
    assert s.graphs_failed == len(failed)
    assert [(f.compile_id, f.error) for f in rep.stages.dynamo.backend_failures] == \
        [(h["compile_id"], h["error"]) for h in failed]
    # each graph the report shows is the last one torch handed for its compile id, op for op
    last = {h["compile_id"]: h for h in handed}
    for g in rep.stages.dynamo.graphs:
        assert g.graph.op_count == last[g.compile_id]["ops"], g.compile_id
        assert g.backend_error == last[g.compile_id]["error"], g.compile_id
    assert rep.ok  # a graph run eagerly is what torch designed: the run did not fail


def test_wont_convert_is_not_a_graph_break():
    rep, truth = longformer()
    dyn = rep.stages.dynamo
    assert not any("WON'T CONVERT" in b.break_type for b in dyn.graph_breaks)
    assert rep.summary.graph_breaks == len(dyn.graph_breaks) == 22
    counted = Counter(b.break_type for b in dyn.graph_breaks if not not_in_counter(b))
    assert counted == break_type_counts(truth["graph_break_counter"])
    lowering = dyn.backend_failures[0].user_frame
    assert lowering is not None and lowering.file.endswith("modeling_longformer.py") and lowering.line == 862


def test_every_view_marks_the_failed_graphs_with_torchs_error():
    from tcinspect import serialize
    from tcinspect.analysis.breaks import breaks_document
    from tcinspect.render import breaks, html, table

    rep, _ = longformer()
    error = "DataDependentOutputException: aten._local_scalar_dense.default"
    summary = render_text(table.summary(rep), 300)
    assert "graphs failed" in summary and " 10 " in summary
    dynamo = render_text(table.dynamo(rep), 300)
    assert dynamo.count("backend failed, ran eagerly") == 5 and error in dynamo
    listed = render_text(breaks.breaks(rep), 300)
    assert listed.startswith("8 graphs (+ 10 the backend failed on, run eagerly) · 22 graph breaks")
    assert "Graphs the backend failed on" in listed and error in listed and "WON'T" not in listed
    doc = breaks_document(rep)
    assert doc["summary"]["graphs"] == 8 and doc["summary"]["graphs_failed"] == 10
    assert len(doc["backend_failures"]) == 10 and doc["backend_failures"][0]["error"] == error
    page = html.render(rep)
    assert 'data-key="graphs"><b>8</b>' in page and "10 more the backend failed on" in page and error in page
    for fmt in ("yaml", "json"):
        back = serialize.loads(serialize.dumps(rep, fmt))
        assert back.stages.dynamo == rep.stages.dynamo and back.summary == rep.summary


# ----------------------------------------------------------------------------- reused reports


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.randn(1, 2),)\n")
    return path


def _stored(path: Path, rep: Report, options: Options) -> None:
    import hashlib

    from tcinspect import cache

    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    cache.store(path, cache.key(path, sha, options, ("model", "example_inputs")), rep.replace(options=options))


def _recompiled(monkeypatch) -> list:
    from tcinspect.capturing import engine

    calls: list = []

    def capture_file(request, **kw):
        calls.append(request.options)
        rep, _ = longformer()
        return rep.replace(options=request.options)

    monkeypatch.setattr(engine, "capture_file", capture_file)
    return calls


@pytest.mark.torch
def test_a_report_whose_backend_failed_does_not_answer_for_another_backend(model_file, monkeypatch):
    from tcinspect.request import Request, obtained

    inductor, eager = Options(backend="inductor"), Options(backend="eager")
    _stored(model_file, longformer()[0], inductor)
    calls = _recompiled(monkeypatch)
    got = obtained(Request(file=str(model_file), compile=eager.compile, also_accept=(inductor,), isolate=False))
    assert calls == [eager] and got.note == ""  # compiled again, with the backend asked for


@pytest.mark.torch
def test_a_reused_report_says_which_recorded_options_it_answers_for(model_file, monkeypatch):
    from tcinspect.request import Request, obtained

    inductor, eager = Options(backend="inductor"), Options(backend="eager")
    evs, _ = events.read_trace(DATA / "cpu-traces" / "2.13.0" / "tiny.jsonl.gz")
    tiny = fromevents.report_from_events(evs, target=Target(kind="model", path=str(model_file)), options=inductor,
                                         device="cpu", torch_version="2.13.0")
    _stored(model_file, tiny, inductor)
    calls = _recompiled(monkeypatch)
    got = obtained(Request(file=str(model_file), compile=eager.compile, also_accept=(inductor,), isolate=False))
    assert calls == [] and got.report.options.backend == "inductor"
    assert "recorded with: backend=inductor (asked: backend=eager)" in got.note
    # with no FILE, the latest report answers, and says so when it was recorded with other options
    from tcinspect.report import CompileOptions

    latest = obtained(Request(compile=CompileOptions(backend="inductor", backward=False)))
    assert "recorded with: backward (asked: no backward)" in latest.note and f"give {model_file}" in latest.note


@pytest.mark.slow
def test_no_backward_shows_no_backward_kernels_after_an_aot_autograd_cache_hit(conformance):
    import conformance as harness
    from tcinspect.capturing.engine import capture_file

    full = conformance("mlp_train", "inductor").report  # forward and backward, now in the AOTAutograd cache
    rep = capture_file(harness.MODELS / "mlp_train.py", compile=CompileOptions(backward=False), quiet=True)
    assert [c.aot_autograd_cache for c in rep.compiles] == ["hit"]
    assert [o.part for o in rep.stages.inductor.outputs] == ["forward"]
    forward = [k.name for o in full.stages.inductor.outputs if o.part == "forward" for k in o.kernels]
    assert [k.name for o in rep.stages.inductor.outputs for k in o.kernels] == forward
    assert rep.summary.kernels == len(forward)
