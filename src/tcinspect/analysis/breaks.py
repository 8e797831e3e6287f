"""Graph breaks grouped by identity, and the `breaks` command's YAML/JSON (pure; no torch)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from tcinspect.analysis import coverage, fixes
from tcinspect.plaindata import plain
from tcinspect.report import FrameCoverage, GraphBreak, Report, break_identity


@dataclass(frozen=True)
class DistinctBreak:
    """One distinct graph break: its first event, how often it occurred, and where."""

    first: GraphBreak
    count: int
    compile_ids: tuple[str, ...]


def distinct_breaks(rep: Report) -> tuple[DistinctBreak, ...]:
    """Graph breaks grouped by identity (type + user location), in first-seen order."""
    groups: dict[tuple[str, str, int, str], list[GraphBreak]] = {}
    for b in rep.stages.dynamo.graph_breaks:
        groups.setdefault(break_identity(b), []).append(b)
    return tuple(DistinctBreak(items[0], len(items), tuple(dict.fromkeys(b.compile_id for b in items)))
                 for items in groups.values())


@dataclass(frozen=True)
class BreakCost:
    """What one distinct graph break costs, from torch's records and the measured call."""

    #: The break made Dynamo give up on its whole frame, which ran eagerly (a fallback to eager).
    frame_ran_eagerly: bool
    #: ATen ops the measured call ran eagerly for it: at the break's line, or (a frame run eagerly) in that frame;
    #: None where no call was measured (a log, a script).
    eager_ops: Optional[int]
    eager_time_us: Optional[float]
    #: The calls captured in the graph this break ended (0 when it ended none).
    calls_before: int
    #: The calls captured in the graph Dynamo resumed with after it: the first compile of the resume function
    #: torch named for the break's line (``torch_dynamo_resume_in_<fn>_at_<line>``); None where torch compiled none.
    calls_after: Optional[int] = None


def same_file(a: str, b: str) -> bool:
    """Whether two recorded paths name one file: torch records a model file as it was given (relative or not),
    the profiler's stack as Python ran it."""
    a, b = a.replace("\\", "/"), b.replace("\\", "/")
    return a == b or a.endswith("/" + b.lstrip("./")) or b.endswith("/" + a.lstrip("./"))


_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)")


def _calls_after(d: DistinctBreak, frames: dict[str, FrameCoverage]) -> Optional[int]:
    """The calls of the graph after a break: the resume function torch compiled for the break's line."""
    broke = [frames[c] for c in d.compile_ids if c in frames]
    if not broke:
        return None
    names = {(m["fn"] if (m := _RESUME.fullmatch(f.function)) else f.function) for f in broke}
    lines = {x.line for x in (d.first.user_frame, d.first.model_frame) if x is not None}
    first: dict[str, int] = {}
    for f in frames.values():
        m = _RESUME.fullmatch(f.function)
        if m and m["fn"] in names and int(m["line"]) in lines and f.file in {b.file for b in broke}:
            first.setdefault(f.function, f.calls_captured)
    return sum(first.values()) if first else None


def break_costs(rep: Report) -> list[tuple[DistinctBreak, BreakCost]]:
    """Each distinct break with its cost, costliest first: a frame run eagerly, then the measured call's eager ops
    (their time on a GPU), then the order torch met them."""
    cov = rep.coverage
    frames = coverage.frames_by_id(rep)
    runtime = cov.runtime if cov is not None and cov.runtime is not None and not cov.runtime.not_measured else None
    out = []
    for d in distinct_breaks(rep):
        eager = [frames[c] for c in d.compile_ids if c in frames and frames[c].eager]
        ops: Optional[int] = None
        time_us: Optional[float] = None
        if runtime is not None:
            if eager:  # the frame's own lines ran eagerly
                hit = [i for i in runtime.islands if any(i.function == f.function and same_file(i.file, f.file)
                                                         for f in eager)]
            else:
                loc = d.first.user_frame
                hit = [i for i in runtime.islands if loc is not None and i.line == loc.line and same_file(i.file, loc.file)]
            ops, time_us = sum(i.ops for i in hit), round(sum(i.time_us for i in hit), 3)
        before = sum(frames[c].calls_captured for c in d.compile_ids if c in frames and not frames[c].eager)
        out.append((d, BreakCost(bool(eager), ops, time_us, before, None if eager else _calls_after(d, frames))))
    order = {id(d): n for n, (d, _) in enumerate(out)}
    gpu = rep.device.startswith("cuda")  # a GPU's time ranks; a CPU's is noisy next to a count of ops

    def cost(x: tuple[DistinctBreak, BreakCost]) -> tuple[bool, float, float, int]:
        ops, time_us = float(x[1].eager_ops or 0), x[1].eager_time_us or 0.0
        return (not x[1].frame_ran_eagerly, -(time_us if gpu else ops), -(ops if gpu else time_us), order[id(x[0])])

    return sorted(out, key=cost)


def ops_per_graph(rep: Report) -> tuple[int, ...]:
    return tuple(g.graph.op_count for g in rep.stages.dynamo.graphs)


def fullgraph_ok(rep: Report) -> bool:
    """Whether the model compiles with fullgraph=True: one graph per call and no graph break."""
    return not rep.stages.dynamo.graph_breaks and rep.stages.dynamo.status == "ok"


def breaks_document(rep: Report, fullgraph: bool = False,
                    trials: Optional[Sequence[fixes.FixTrial]] = None) -> dict[str, Any]:
    """The `breaks` command's YAML/JSON: a summary, then each distinct break as separate fields."""
    s = rep.summary
    summary: dict[str, Any] = {
        "graphs": s.graphs,
        "graph_breaks": s.graph_breaks,
        "distinct_graph_breaks": s.distinct_graph_breaks,
        "ops_per_graph": list(ops_per_graph(rep)),
    }
    if s.graphs_failed:
        summary["graphs_failed"] = s.graphs_failed
    if s.calls_captured >= 0:  # PyTorch CI's coverage figures (reports saved before them have none)
        summary.update(calls_captured=s.calls_captured, unique_graphs=s.unique_graphs,
                       fallbacks_to_eager=s.fallbacks_to_eager)
    if fullgraph:
        summary["compiles_with_fullgraph"] = fullgraph_ok(rep)
    rows = []
    frames = coverage.frames_by_id(rep)
    for d, cost in break_costs(rep):
        b, loc = d.first, d.first.user_frame
        status = fixes.fix_status(b, trials, frames.get(b.compile_id))
        rows.append({
            "type": b.break_type,
            "gb_id": b.gb_id,
            "file": loc.file if loc else "",
            "line": loc.line if loc else 0,
            "function": loc.function if loc else "",
            "code": loc.code if loc else "",
            "count": d.count,
            "compile_ids": list(d.compile_ids),
            "reason": b.reason,
            "explanation": b.explanation,
            "hints": list(b.hints),
            "fix": b.fix,
            # whether the fix was verified by a trial capture (breaks --try-fixes), in words
            "fix_verified": status.startswith("verified:"),
            "fix_status": status,
            # a break in another file: the line of the model that led there (None otherwise)
            "model_frame": {"file": b.model_frame.file, "line": b.model_frame.line,
                            "function": b.model_frame.function, "code": b.model_frame.code}
            if b.model_frame else None,
            # what it costs: its frame run eagerly, the eager ops of the measured call (null: none was measured)
            # (time only on a GPU, where it ranks them: a CPU's differs run to run and ops rank them)
            "cost": {"frame_ran_eagerly": cost.frame_ran_eagerly, "eager_ops": cost.eager_ops,
                     "eager_time_us": cost.eager_time_us if rep.device.startswith("cuda") else None,
                     "calls_before": cost.calls_before,
                     "calls_after": cost.calls_after},
        })
    doc = {"torch_version": rep.torch_version, "target": rep.target.path or rep.target.model_name,
           "summary": summary, "breaks": rows}
    if rep.stages.dynamo.backend_failures:  # their own rows: a frame run eagerly, not a graph break
        doc["backend_failures"] = [
            {"compile_id": f.compile_id, "function": f.function, "file": f.file, "line": f.line, "error": f.error,
             "user_file": f.user_frame.file if f.user_frame else "", "user_line": f.user_frame.line if f.user_frame else 0}
            for f in rep.stages.dynamo.backend_failures]
    if rep.coverage is not None:  # frames Dynamo gave up on, which ran eagerly (fallbacks_to_eager)
        doc["eager_frames"] = [plain(f) for f in coverage.eager_frames(rep)]
    if trials is not None:  # breaks --try-fixes: each trial, before -> after
        doc["fixes"] = fixes.fixes_document(trials)
    return doc
