"""Reports that never lie: determinism and in-process hygiene."""

from __future__ import annotations

import dataclasses
import logging

import torch

from helpers import MODELS, SAMPLES, cli
from tcinspect import serialize
from tcinspect.capturing.engine import capture_file
from tcinspect.report import CompileOptions


def test_same_model_twice_gives_byte_identical_yaml(capsys, tmp_path, monkeypatch):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for out in (a, b):
        monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / f"cache-{out.stem}"))  # no reuse
        code, _, _ = cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "aot_eager",
                         "--no-timings", "-o", str(out))
        assert code == 0
    import difflib
    assert a.read_bytes() == b.read_bytes(), "".join(difflib.unified_diff(a.read_text().splitlines(True), b.read_text().splitlines(True)))[:3000]


def test_twenty_captures_leak_no_handlers_config_or_caches():
    trace_logger = logging.getLogger("torch.__trace")
    torch_loggers = {n: list(logging.getLogger(n).handlers) for n in ("torch", "torch._dynamo")}
    handlers, filters = list(trace_logger.handlers), [list(h.filters) for h in trace_logger.handlers]
    dynamo_config = torch._dynamo.config.get_config_copy()
    inductor_config = torch._inductor.config.get_config_copy()
    opts = CompileOptions(backend="eager")
    reports = [capture_file(SAMPLES / "tiny.py", compile=opts, quiet=True) for _ in range(20)]
    assert trace_logger.handlers == handlers and [list(h.filters) for h in handlers] == filters
    assert {n: list(logging.getLogger(n).handlers) for n in torch_loggers} == torch_loggers
    assert all(not h.filters for n in torch_loggers for h in logging.getLogger(n).handlers)
    assert torch._dynamo.config.get_config_copy() == dynamo_config
    assert torch._inductor.config.get_config_copy() == inductor_config
    assert len({serialize.dumps(r, "yaml", timings=False) for r in reports}) == 1
    # Dynamo's per-code caches are reset after each capture: nothing accumulates
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    model = __import__("runpy").run_path(str(SAMPLES / "tiny.py"))["model"]
    assert _debug_get_cache_entry_list(type(model).forward.__code__) == []


# a segfault and a hang under --timeout: rows of the corpus (tests/test_corpus.py)


def test_isolated_capture_gives_the_same_report_and_errors(capsys, tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "eager", "--no-timings",
               "-o", str(a), "--fresh")[0] == 0
    assert cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "eager", "--no-timings",
               "-o", str(b), "--fresh", "--timeout", "300")[0] == 0
    ra, rb = serialize.load(a), serialize.load(b)

    def without_raw(rep):  # PyTorch's raw break text includes the caller's stack (pytest vs the child)
        dyn = rep.stages.dynamo
        breaks = tuple(dataclasses.replace(x, raw="") for x in dyn.graph_breaks)
        return rep.replace(stages=dataclasses.replace(rep.stages, dynamo=dataclasses.replace(dyn, graph_breaks=breaks)))

    assert serialize.dumps(without_raw(ra), "yaml", timings=False) == serialize.dumps(without_raw(rb), "yaml", timings=False)
    code, _, err = cli(capsys, "trace", str(MODELS / "raises.py"), "--backend", "eager", "--timeout", "300")
    assert code == 2 and "ValueError: boom in forward" in err
