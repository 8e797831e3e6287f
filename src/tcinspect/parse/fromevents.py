"""Structured-trace events -> a whole Report: the one function every source of events goes through.

Live captures (capturing/engine.py), the isolated child's events after a crash or timeout
(capturing/isolate.py), ranks that ended without a report (capturing/launcher.py), recorded traces and
TORCH_TRACE logs (parse/tracelog.py) all call ``report_from_events``. Pure: no torch import, so a log
from any machine reads anywhere (tests/test_layout.py says so).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

from tcinspect._version import __version__
from tcinspect.parse import assemble, cudagraphs, graph_execution, provenance, shapes
from tcinspect.parse import breaks as breaks_mod
from tcinspect.parse.events import Event, parse_health
from tcinspect.parse.run import RunEvents
from tcinspect.report import CompileMetrics, InputSetError, Options, Report, Stages, Target, Verification, sections
from tcinspect.report import Failure as ReportFailure


@dataclass(frozen=True)
class SourceHealth:
    """What the reader of the events' source could not read (counted in Report.parse, never raised)."""

    #: lines that were not a record (a TORCH_TRACE log's, or a half-written line of a streamed file)
    lines_not_understood: int = 0
    payload_mismatches: int = 0
    truncated_payloads: int = 0
    files_ignored: int = 0


def report_from_events(
    events: Sequence[Event],
    *,
    target: Target,
    options: Options,
    device: str,
    torch_version: str,
    source: SourceHealth = SourceHealth(),
    failure: Optional[assemble.StageFailure] = None,
    side_table: Optional[assemble.SideTable] = None,
    verification: Optional[Verification] = None,
    calls: int = 0,
    input_errors: Sequence[InputSetError] = (),
    timings: Sequence[tuple[str, float]] = (),
) -> Report:
    """The report of a run's events; ``failure`` is what stopped the run when it raised (else read from
    compilation_metrics). ``timings`` come first, then ``assemble_s`` (events -> stages) is added.
    Report.parse counts what was not understood: unknown events, unreadable artifacts, and ``source``'s."""
    if side_table is None:
        side_table = ({}, {})
    start = time.perf_counter()
    shape_section, shapes_unread = shapes.build(events)
    unreadable = {**provenance.unreadable(events), **shapes_unread, **graph_execution.unreadable(events)}
    skips_unread = cudagraphs.unreadable(events)
    if skips_unread:
        unreadable[cudagraphs.SKIP_ARTIFACT] = skips_unread
    parse = parse_health(events, lines_not_understood=source.lines_not_understood,
                         unreadable=unreadable, payload_mismatches=source.payload_mismatches,
                         truncated_payloads=source.truncated_payloads, files_ignored=source.files_ignored)

    def build(f: Optional[assemble.StageFailure]) -> tuple[Stages, tuple[CompileMetrics, ...]]:
        return assemble.build(events, backend=options.backend, failure=f, side_table=side_table,
                              backward_ran=options.backward or target.kind == "script")

    stages, metrics = build(failure)
    found = failure or assemble.failure_from_metrics(metrics, stages)
    if found is not None and failure is None:
        stages, metrics = build(found)
    assembled = stages
    dynamo = stages.dynamo
    # dynamic shapes are read with the stages: their advice goes with each recompile
    shape_section = shapes.with_final_guards(shape_section, {g.compile_id: [x.expression for x in g.guards]
                                                             for g in dynamo.graphs if g.guards})
    stages = replace(stages, dynamo=replace(dynamo, graph_breaks=tuple(
        breaks_mod.with_context(b) for b in dynamo.graph_breaks), recompiles=tuple(
        shapes.with_shape_advice(r, shape_section) for r in dynamo.recompiles)))
    error = (found.blame or f"{found.stage} stage failed: {found.message}") if found else ""
    run = RunEvents(events, options, device, target, stages, assembled, metrics)
    # every other section its registered builder reads from the run (report/sections.py)
    built: dict[str, Any] = {s.key: sections.implementation(s.build)(run) for s in sections.SECTIONS if s.build}
    return Report(
        torch_version=torch_version,
        device=device,
        target=target,
        options=options,
        stages=stages,
        compiles=metrics,
        error=error,
        failure=ReportFailure(found.kind, error) if found else None,
        parse=parse,
        verification=verification,
        tcinspect_version=__version__,
        calls=calls,
        input_errors=tuple(input_errors),
        timings=(*timings, ("assemble_s", round(time.perf_counter() - start, 4))),
        shapes=shape_section,
        **built,
    )


def last_stage(events: Sequence[Event]) -> str:
    """The compiler stage a run had reached when its events end: dynamo, aot_autograd or inductor."""
    stage = "dynamo"
    for e in events:
        if e.name.startswith(("aot_", "aotautograd")):
            stage = "aot_autograd"
        elif e.name.startswith(("inductor_", "fx_graph_", "triton_")):
            stage = "inductor"
    return stage


def partial_report(events: Sequence[Event], why: str, *, target: Target, options: Options, torch_version: str,
                   source: SourceHealth = SourceHealth()) -> Report:
    """The report of a run that ended before it wrote its own (a crash, a timeout, a rank that was stopped):
    the stages its events show, the last one failed with ``why``."""
    stage = last_stage(events)
    failure = assemble.StageFailure(stage, why, blame=f"{stage} stage: {why}", kind="crashed")
    return report_from_events(events, target=target, options=options, device=options.device or "?",
                              torch_version=torch_version, failure=failure, source=source)
