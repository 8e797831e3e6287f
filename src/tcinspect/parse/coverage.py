"""How much of the model torch.compile captured: PyTorch CI's coverage figures from a run's events (pure).

PyTorch's CI (benchmarks/dynamo/check_graph_breaks.py) gates on ``calls_captured`` (the ops Dynamo put into graphs,
``counters["stats"]``) and ``fallbacks_to_eager`` (frames Dynamo gave up on and ran eagerly:
``counters["frames"]["total"] - ["ok"]``) beside its graph-break count. A capture logs torch's counters as its calls
end (capturing/recording.py: ``COUNTERS_ARTIFACT``); a TORCH_TRACE log has none, and its per-compile records give the
same figures: each graph's calls (the ``dynamo_output_graph`` Dynamo counted them on, else compilation_metrics'
``graph_op_count``) and each compile torch recorded a ``fail_type`` for (tests/test_coverage.py checks both
against the counters of the same run). The measured call's ATen ops (``RUNTIME_COVERAGE_ARTIFACT``) come from
capturing/runtime_coverage.py.
"""

from __future__ import annotations

import json
import linecache
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from tcinspect.parse.events import COUNTERS_ARTIFACT, RUNTIME_COVERAGE_ARTIFACT, Event
from tcinspect.report import (
    CompileMetrics,
    Coverage,
    EagerIsland,
    FrameCoverage,
    RuntimeCoverage,
    SourceLocation,
    Stages,
)

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: Coverage.source values
COUNTERS = "counters"
COMPILATION_METRICS = "compilation_metrics"

#: Why a report has no runtime coverage, by target kind (a model file's capture logs its own record).
NOT_MEASURED = {
    "torch_trace": "a TORCH_TRACE log records no run-time ops: run tcinspect on the model file to measure them",
    "script": "a script's calls cannot be repeated to measure them: define `model` and `example_inputs`",
    "rank": "ranks are measured by their own reports",
}


def build(events: Sequence[Event], stages: Stages, metrics: Sequence[CompileMetrics], target_kind: str) -> Coverage:
    """The run's coverage: torch's counters where the capture logged them, else its per-compile records."""
    frames = _frames(events, stages, metrics)
    counters = _last_json(events, COUNTERS_ARTIFACT)
    runtime = _runtime(_last_json(events, RUNTIME_COVERAGE_ARTIFACT), target_kind)
    graphs = sum(1 for g in stages.dynamo.graphs if not g.backend_error)
    if counters is None:
        return Coverage(source=COMPILATION_METRICS, calls_captured=sum(f.calls_captured for f in frames),
                        unique_graphs=graphs, fallbacks_to_eager=sum(1 for f in frames if f.eager),
                        frames=frames, runtime=runtime)
    stats, seen = counters.get("stats") or {}, counters.get("frames") or {}
    total, ok = int(seen.get("total", 0)), int(seen.get("ok", 0))
    return Coverage(source=COUNTERS, calls_captured=int(stats.get("calls_captured", 0)),
                    unique_graphs=int(stats.get("unique_graphs", 0)), fallbacks_to_eager=total - ok,
                    graph_break_counter=int(counters.get("graph_break", 0)),
                    frames=frames, runtime=runtime)


def _frames(events: Sequence[Event], stages: Stages, metrics: Sequence[CompileMetrics]) -> tuple[FrameCoverage, ...]:
    """Every compile, in torch's order: the calls its graph captured, or why the frame ran eagerly."""
    ops = {g.compile_id: g.graph.op_count for g in stages.dynamo.graphs}
    where: dict[str, tuple[str, int]] = {}
    for e in events:
        if e.name == "compilation_metrics" and e.compile_id:
            file, line = e.meta.get("fail_user_frame_filename"), e.meta.get("fail_user_frame_lineno")
            if isinstance(file, str) and file and isinstance(line, int):
                where[e.compile_id] = (file, line)
    out = []
    for m in metrics:
        eager = bool(m.fail_type)
        user = where.get(m.compile_id) if eager else None
        out.append(FrameCoverage(
            compile_id=m.compile_id, function=m.function, file=m.file, line=m.line,
            calls_captured=ops.get(m.compile_id, m.graph_op_count), eager=eager,
            fail_type=m.fail_type.rsplit(".", 1)[-1] if eager else "",
            reason=_first_line(m.fail_reason) if eager else "",
            user_frame=_located(*user) if user else None))
    return tuple(out)


def _located(file: str, line: int) -> SourceLocation:
    """A user line with its text, when the file is readable here (a log from another machine: the place only)."""
    linecache.checkcache(file)
    return SourceLocation(file=file, line=line, code=linecache.getline(file, line).strip())


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _last_json(events: Sequence[Event], name: str) -> Optional[dict[str, Any]]:
    for e in reversed(events):
        if e.name == name:
            try:
                data = json.loads(e.payload)
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _runtime(data: Optional[dict[str, Any]], target_kind: str) -> Optional[RuntimeCoverage]:
    if data is None:
        why = NOT_MEASURED.get(target_kind)
        return RuntimeCoverage(not_measured=why) if why else None
    islands = tuple(
        EagerIsland(file=str(i.get("file", "")), line=int(i.get("line", 0)), function=str(i.get("function", "")),
                    code=str(i.get("code", "")), module=str(i.get("module", "")), ops=int(i.get("ops", 0)), time_us=float(i.get("time_us", 0.0)),
                    op_counts=tuple((str(n), int(c)) for n, c in i.get("op_counts") or ()))
        for i in data.get("islands") or ())
    return RuntimeCoverage(ops=int(data.get("ops", 0)), compiled_ops=int(data.get("compiled_ops", 0)),
                           eager_ops=int(data.get("eager_ops", 0)),
                           compiled_time_us=float(data.get("compiled_time_us", 0.0)),
                           eager_time_us=float(data.get("eager_time_us", 0.0)), islands=islands,
                           not_measured=str(data.get("not_measured", "")))


def section(run: RunEvents) -> Coverage:
    """The report's section of how much of the model was captured, from a run (report/sections.py registers it)."""
    return build(run.events, run.stages, run.metrics, run.target.kind)
