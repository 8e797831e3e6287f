"""``guards --per-call N``: time calls of the compiled model under torch.profiler, after compiling.

What Dynamo does on every call before the graph runs: the cache lookup (the guards of each cache entry it
tries: the profiler's "TorchDynamo Cache Lookup" event, recorded by torch's C++ frame evaluation), then the
pre-graph bytecode and the backend's runtime wrapper, up to the first ATen op. Each input set is called
once untimed (a warm-up, then once more under the profiler), then ``runs`` rounds call every input set in turn, forward only, each call inside
a ``record_function`` span that bounds it. The result is logged as tcinspect's own artifact on the
structured trace (parse/guard_cost.py reads it), so an isolated child's report carries it too.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Optional

from tcinspect.capturing import _compat, modelfile
from tcinspect.parse.events import PER_CALL_ARTIFACT

#: The profiler event torch's frame evaluation records around each cache lookup (torch/csrc/dynamo, 2.11-2.15)
LOOKUP_EVENT = "TorchDynamo Cache Lookup"
#: The event around each compiled graph's run, named with its compile id (torch/_dynamo, 2.11-2.15)
REGION_PREFIX = "Torch-Compiled Region: "
#: The name of tcinspect's span around one timed call; the input set's index follows it
CALL_SPAN = "tcinspect call "
#: Untimed rounds over the input sets before the profiled ones. The first calls after a capture run slower than a
#: plain process's steady state (a tiny Llama, torch 2.13 CPU: lookups of 578, 260, 202 µs, then ~140 µs, where a
#: plain process measured 155 µs): with one round, the median of 20 timed calls read 1.5x a plain process's
WARMUP_ROUNDS = 5
#: When set, the profile is also written there as a Chrome trace (to compare with other tools)
TRACE_ENV = "TCINSPECT_PER_CALL_TRACE"


def _orders() -> dict[str, list[str]]:
    """Each frame's cache entries, front first, keyed by the frame id of their compile ids."""
    out = {}
    for _code, ids in _compat.dynamo.frame_cache_entries():
        if ids and ids[0]:
            out[ids[0].split("/")[0]] = ids
    return out


def measure(compiled: Callable[..., Any], calls: Sequence[tuple[int, Any]], runs: int,
            compiles_so_far: Callable[[], list[str]]) -> dict[str, Any]:
    """Time ``runs`` rounds of ``calls`` ((input set, args) pairs); the per-call record as plain data.

    ``compiles_so_far`` lists the compile ids recorded until now: a compile during the timed calls is
    named in the record (its calls time compiling, not the steady state).
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    for _ in range(WARMUP_ROUNDS):  # warm-up: the first calls after a capture are slower (see WARMUP_ROUNDS)
        for _, args in calls:
            modelfile.as_call(args)(compiled)
    before = set(compiles_so_far())
    orders: list[dict[str, list[str]]] = []
    with _own_objects_frozen(), _compat.profiler.markers_dropped(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _, args in calls:  # and once under the profiler, outside any span: its own first-call cost
            modelfile.as_call(args)(compiled)
        for _ in range(runs):
            for index, args in calls:
                orders.append(_orders())
                with record_function(f"{CALL_SPAN}{index}"):
                    modelfile.as_call(args)(compiled)
    path = os.environ.get(TRACE_ENV)
    if path:
        prof.export_chrome_trace(path)
    record = {"runs": runs, "calls": _calls(prof.events(), orders),
              "frames": _frames(), "compiled_during": sorted(set(compiles_so_far()) - before)}
    return record


@contextlib.contextmanager
def _own_objects_frozen() -> Iterator[None]:
    """The objects alive now (the capture's records as much as the user's model) moved out of the cycle collector's
    reach while calls are timed (``gc.freeze``), so a collection during a call scans what a plain process's would."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _calls(events: Any, orders: list[dict[str, list[str]]]) -> list[dict[str, Any]]:
    """One record per tcinspect call span, in order, from the profiler's events."""
    spans = sorted((e for e in events if e.name.startswith(CALL_SPAN)), key=lambda e: e.time_range.start)
    inner = sorted((e for e in events if not e.name.startswith(CALL_SPAN)), key=lambda e: e.time_range.start)
    out = []
    for i, span in enumerate(spans):
        start, end = span.time_range.start, span.time_range.end
        mine = [e for e in inner if start <= e.time_range.start and e.time_range.end <= end
                and e.thread == span.thread]
        lookups = [e for e in mine if e.name == LOOKUP_EVENT]
        first_op = next((e for e in mine if e.name.startswith("aten::")), None)
        regions = [e.name[len(REGION_PREFIX):] for e in mine if e.name.startswith(REGION_PREFIX)]
        order = orders[i] if i < len(orders) else {}
        tried = []
        for cid in regions:
            ids = order.get(cid.split("/")[0], [])
            tried.append(ids.index(cid) + 1 if cid in ids else 0)
        out.append({
            "input_set": int(span.name[len(CALL_SPAN):]),
            "call_us": round(end - start, 3),
            "lookup_us": round(sum(e.time_range.end - e.time_range.start for e in lookups), 3),
            "lookups": len(lookups),
            "before_first_op_us": round(first_op.time_range.start - start, 3) if first_op is not None else None,
            "compile_ids": regions,
            "entries_tried": tried,
        })
    return out


def _frames() -> list[dict[str, Any]]:
    return [{"function": code.co_name, "file": code.co_filename, "line": code.co_firstlineno, "compile_ids": ids}
            for code, ids in _compat.dynamo.frame_cache_entries()]


def log(record: dict[str, Any]) -> None:
    """Put the record on the structured trace, where the recorder keeps it with the compile's events."""
    _compat.trace.log_artifact(PER_CALL_ARTIFACT, json.dumps(record))


def not_measured(runs: int, why: str) -> dict[str, Any]:
    return {"runs": runs, "calls": [], "frames": [], "compiled_during": [], "note": why}


def measured_or_why(compiled: Callable[..., Any], calls: Sequence[tuple[int, Any]], runs: int,
                    compiles_so_far: Callable[[], list[str]], failed: Optional[str]) -> dict[str, Any]:
    """The record, or why there is none (a compiler stage failed; an input set raised)."""
    if failed:
        return not_measured(runs, failed)
    return measure(compiled, calls, runs, compiles_so_far)
