"""Structured-trace events -> a whole Report: the one function live captures and TORCH_TRACE logs share.

Pure: no torch import, so a log from any machine reads anywhere (tests/test_torchtrace.py says so).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Optional

from tcinspect import __version__
from tcinspect.parse import assemble, compiletime
from tcinspect.parse import breaks as breaks_mod
from tcinspect.parse.events import Event
from tcinspect.report import (
    CompileMetrics,
    InputSetError,
    Options,
    ParseHealth,
    Report,
    Stages,
    Target,
    Verification,
)


def report_from_events(
    events: Sequence[Event],
    *,
    target: Target,
    options: Options,
    device: str,
    torch_version: str,
    parse: Optional[ParseHealth] = None,
    failure: Optional[assemble.Failure] = None,
    side_table: assemble.SideTable = ({}, {}),
    verification: Optional[Verification] = None,
    calls: int = 0,
    input_errors: Sequence[InputSetError] = (),
    timings: Sequence[tuple[str, float]] = (),
) -> Report:
    """The report of a run's events; ``failure`` is what stopped the run when it raised (else read from
    compilation_metrics). ``timings`` come first, then ``assemble_s`` (events -> stages) is added."""
    start = time.perf_counter()

    def build(f: Optional[assemble.Failure]) -> tuple[Stages, tuple[CompileMetrics, ...]]:
        return assemble.build(events, backend=options.backend, failure=f, side_table=side_table)

    stages, metrics = build(failure)
    found = failure or assemble.failure_from_metrics(metrics, stages)
    if found is not None and failure is None:
        stages, metrics = build(found)
    compile_time = compiletime.build(events, stages.dynamo.recompiles)
    dynamo = stages.dynamo
    stages = replace(stages, dynamo=replace(dynamo, graph_breaks=tuple(
        breaks_mod.with_context(b) for b in dynamo.graph_breaks)))
    return Report(
        torch_version=torch_version,
        device=device,
        target=target,
        options=options,
        stages=stages,
        compiles=metrics,
        error=(found.blame or f"{found.stage} stage failed: {found.message}") if found else "",
        passes=assemble.build_passes(events),
        parse=parse,
        verification=verification,
        tcinspect_version=__version__,
        calls=calls,
        input_errors=tuple(input_errors),
        timings=(*timings, ("assemble_s", round(time.perf_counter() - start, 4))),
        compile_time=compile_time,
    )
