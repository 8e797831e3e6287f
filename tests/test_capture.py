"""Capture on real CPU models, checked against oracles from the same torch."""

from __future__ import annotations

import logging
import re
import runpy

import pytest
import torch

from helpers import MODELS, SAMPLES, launched
from tcinspect import serialize
from tcinspect.capturing.engine import capture, capture_file
from tcinspect.errors import ModelRaisedError
from tcinspect.report import FAILED, NOT_RUN, OK, CompileOptions


def content(rep):
    """A report's content: what must not change between runs (no timings, no cache states)."""
    data = serialize.to_dict(rep, timings=False)
    for c in data["compiles"]:
        for k in list(c):
            if k.endswith("_time_s") or k == "aot_autograd_cache":
                c[k] = None
    for o in data["stages"]["inductor"]["outputs"]:
        o["cache"] = None
        # the wrapper names the cache file it was loaded from
        o["wrapper"] = re.sub(r"/[\w./-]*torchinductor[\w./-]*", "<cache>", o["wrapper"])
    for k in ("compile_time_s", "cache_hits", "cache_misses"):
        data["summary"][k] = None
    return data


def test_tiny_model_all_stages(tiny_report):
    rep = tiny_report
    assert rep.ok and rep.error == ""
    s = rep.summary
    assert (s.graphs, s.graph_breaks, s.recompiles) == (1, 0, 0)
    assert all(st.status == OK for st in (rep.stages.dynamo, rep.stages.aot_autograd, rep.stages.inductor))
    graph = rep.stages.dynamo.graphs[0].graph
    ops = [n for n in graph.nodes if n.op == "call_function"]
    assert [n.source.line for n in ops] == [11, 12, 13]  # tiny.py: linear, relu, * 0.5
    assert all(n.dtype == "f32" for n in ops) and ops[0].shape == ("8", "32")
    (aot,) = rep.stages.aot_autograd.graphs
    assert aot.forward is not None and aot.backward is not None and aot.forward.saved_for_backward
    parts = sorted(o.part for o in rep.stages.inductor.outputs)
    assert parts == ["backward", "forward"]
    assert rep.stages.dynamo.graphs[0].guards and any(g.kind == "tensor" for g in rep.stages.dynamo.graphs[0].guards)


@pytest.mark.parametrize("sample", ["tiny.py", "gelu_linear.py", "graph_breaks.py"])
def test_kernels_equal_run_and_get_code_oracle(sample, tiny_report, inductor_cache):
    """For every CPU sample, the kernels listed are those in the code run_and_get_code returns."""
    from torch._inductor.utils import run_and_get_code

    rep = tiny_report if sample == "tiny.py" else capture_file(SAMPLES / sample)
    torch._dynamo.reset()
    ns = runpy.run_path(str(SAMPLES / sample))
    compiled = torch.compile(ns["model"])

    def step():
        out = compiled(*ns["example_inputs"])
        out.sum().backward()
        return out

    _, codes = run_and_get_code(step)
    torch._dynamo.reset()
    oracle = sorted(name for code in codes for name in launched(code))
    ours = sorted(k.name for o in rep.stages.inductor.outputs for k in o.kernels)
    assert ours == oracle and ours
    assert len(rep.stages.inductor.outputs) == len(codes)


def _differences(a, b, path="", found=None):
    """Where two plain-data values differ: (path, a's value, b's value), each value cut to 300 characters."""
    found = [] if found is None else found
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            _differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}", found)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _differences(x, y, f"{path}[{i}]", found)
    elif a != b:
        found.append((path, repr(a)[:300], repr(b)[:300]))
    return found


def test_cold_and_warm_caches_give_the_same_content(tiny_report):
    warm = capture_file(SAMPLES / "tiny.py")
    assert warm.summary.cache_hits >= 1  # the session's tiny_report compiled it cold first
    # where they differ, each place by name (the whole reports do not fit a failure's message)
    assert _differences(content(warm), content(tiny_report)) == []


def test_graph_count_equals_a_counting_backend(breaks_report):
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    ns = runpy.run_path(str(SAMPLES / "graph_breaks.py"))
    torch.compile(ns["model"], backend=counting)(*ns["example_inputs"])
    torch._dynamo.reset()
    assert breaks_report.summary.graphs == len(graphs) == 4
    assert breaks_report.summary.graph_breaks == 3
    lines = sorted(b.user_frame.line for b in breaks_report.stages.dynamo.graph_breaks)
    assert lines == [12, 13, 15]
    assert breaks_report.stages.inductor.status == NOT_RUN and "aot_eager" in breaks_report.stages.inductor.error


def test_two_captures_in_one_process_are_identical_and_clean():
    trace_logger = logging.getLogger("torch.__trace")
    handlers_before = list(trace_logger.handlers)
    config_before = torch._dynamo.config.get_config_copy()
    opts = CompileOptions(backend="aot_eager")
    a = capture_file(SAMPLES / "tiny.py", compile=opts)
    b = capture_file(SAMPLES / "tiny.py", compile=opts)
    assert content(a) == content(b)
    assert trace_logger.handlers == handlers_before
    assert torch._dynamo.config.get_config_copy() == config_before


def test_library_api_capture_on_a_callable():
    lin = torch.nn.Linear(4, 4)
    rep = capture(lambda x: torch.nn.functional.gelu(lin(x)), torch.randn(2, 4),
                  compile=CompileOptions(backend="aot_eager"))
    assert rep.summary.graphs == 1 and rep.target.kind == "callable"
    assert any("gelu" in n.target for n in rep.stages.dynamo.graphs[0].graph.nodes)


def test_input_sets_record_recompiles():
    def f(x, n):
        return x * n

    rep = capture(f, torch.randn(4), 2, input_sets=[(torch.randn(4), 3)], compile=CompileOptions(backend="eager"))
    assert rep.summary.graphs == 2
    assert rep.summary.recompiles == 1


def test_script_mode_records_what_the_script_compiles():
    rep = capture_file(MODELS / "script_mode.py", script_args=["3.0"])
    assert rep.target.kind == "script"
    assert rep.summary.graphs == 1
    assert rep.stages.aot_autograd.graphs  # the script compiled with aot_eager


def test_model_that_raises():
    with pytest.raises(ModelRaisedError) as err:
        capture_file(MODELS / "raises.py", compile=CompileOptions(backend="eager"))
    assert "raises.py:6" in err.value.cause and "ValueError: boom in forward" in err.value.cause


def test_failing_backend_gives_a_partial_report():
    rep = capture_file(MODELS / "failing_backend.py", compile=CompileOptions(backend="tcinspect_failing"))
    assert not rep.ok and "lowering failed on purpose" in rep.error
    assert rep.stages.dynamo.status == OK and rep.stages.dynamo.graphs
    assert FAILED in (rep.stages.aot_autograd.status, rep.stages.inductor.status)


def test_public_api_from_the_package(tmp_path):
    import tcinspect

    rep = tcinspect.capture(lambda x: x.sin() + 1, torch.randn(3), compile=CompileOptions(backend="eager"))
    path = tmp_path / "r.json"
    serialize.write_atomic(path, serialize.dumps(rep, "json"))
    assert tcinspect.load_report(path) == rep
    assert isinstance(rep, tcinspect.Report)
