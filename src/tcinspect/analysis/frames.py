"""Per Python frame Dynamo compiled: its compiles, the cache entries they left, and guards no graph lists (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from tcinspect.report import CompileMetrics, Report, guards_per_compile


@dataclass(frozen=True)
class FrameCompiles:
    """One Python frame Dynamo compiled: its compiles and cache entries."""

    frame: str  # the frame id
    function: str
    compiles: int
    cache_entries: int
    limit_hit: bool


def frames(rep: Report) -> list[FrameCompiles]:
    """Per frame: compiles (first + recompiles) and the cache entries they left (graphs compiled)."""
    by_frame: dict[str, list[CompileMetrics]] = {}
    for c in rep.compiles:
        by_frame.setdefault(c.compile_id.split("/")[0], []).append(c)
    graphs = {g.compile_id for g in rep.stages.dynamo.graphs}
    limit = {r.compile_id for r in rep.stages.dynamo.recompiles if r.limit_hit}
    out = []
    for frame, items in by_frame.items():
        out.append(FrameCompiles(frame, items[0].function, len(items),
                                 sum(1 for c in items if c.compile_id in graphs and c.compile_id not in limit),
                                 any(c.compile_id in limit for c in items)))
    return out


def guards_without_graph(rep: Report) -> dict[str, int]:
    """Guards of compiles that made no graph (a frame that broke before its first op), by compile id:
    counted in the summary's guards, though no graph lists them."""
    graphs = {g.compile_id for g in rep.stages.dynamo.graphs}
    return {cid: n for cid, n in guards_per_compile(rep.stages, rep.compiles).items() if n and cid not in graphs}
