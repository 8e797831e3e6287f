"""The headline counts of a report, and why a report is not ok."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report.compile_time import CompileTime
from tcinspect.report.coverage import Coverage
from tcinspect.report.stages import CompileMetrics, Stages, _break_identity, guards_per_compile


@dataclass(frozen=True)
class Summary:
    """The headline counts. docs/trace.md ("What each count means") defines each, a graph break included."""

    graphs: int
    graph_breaks: int
    distinct_graph_breaks: int
    recompiles: int
    guards: int
    aot_graphs: int
    kernels: int
    compile_time_s: float
    cache_hits: int
    cache_misses: int
    #: Graphs the backend failed on, which ran eagerly: not counted in ``graphs``.
    graphs_failed: int = 0
    #: PyTorch CI's coverage figures (Report.coverage): ops captured into graphs, graphs compiled, frames run
    #: eagerly. -1 where the report has no coverage (saved before it was recorded).
    calls_captured: int = -1
    unique_graphs: int = -1
    fallbacks_to_eager: int = -1


#: Failure.kind: why a report is not ok, which decides the exit code (errors.exit_code_for).
#: stage: a compiler stage failed · user_target: a --backend or --pass the user gave failed · crashed: the
#: capture (or a rank) crashed, hung past --timeout or never started · rank_error: a rank's own bad input
FAILURE_KINDS = ("stage", "user_target", "crashed", "rank_error")


@dataclass(frozen=True)
class Failure:
    """Why a report is not ok, typed: the one line a command prints (cause — fix) and its exit code (kind)."""

    kind: str  # one of FAILURE_KINDS
    cause: str
    fix: str = ""


def summarize(stages: Stages, compiles: tuple[CompileMetrics, ...], compile_time: Optional[CompileTime] = None,
              coverage: Optional[Coverage] = None) -> Summary:
    """The headline counts of a run's stages (a report's, or one rank's)."""
    dyn = stages.dynamo
    keys = {_break_identity(b) for b in dyn.graph_breaks}
    aot = sum(1 for g in stages.aot_autograd.graphs for part in (g.joint, g.forward, g.backward, g.inference)
              if part is not None)
    # backward compile time (bwd_compilation_metrics), which compilation_metrics does not include
    backward_s = sum(c.total_s for c in compile_time.compiles if c.part == "backward") if compile_time else 0.0
    return Summary(
        graphs=sum(1 for g in dyn.graphs if not g.backend_error),
        graph_breaks=len(dyn.graph_breaks),
        distinct_graph_breaks=len(keys),
        recompiles=len(dyn.recompiles),
        guards=sum(guards_per_compile(stages, compiles).values()),
        aot_graphs=aot,
        kernels=sum(len(o.kernels) for o in stages.inductor.outputs),
        compile_time_s=round(sum(c.entire_frame_compile_time_s for c in compiles) + backward_s, 3),
        cache_hits=sum(1 for o in stages.inductor.outputs if o.cache == "hit"),
        cache_misses=sum(1 for o in stages.inductor.outputs if o.cache == "miss"),
        graphs_failed=len(dyn.backend_failures),
        calls_captured=coverage.calls_captured if coverage is not None else -1,
        unique_graphs=coverage.unique_graphs if coverage is not None else -1,
        fallbacks_to_eager=coverage.fallbacks_to_eager if coverage is not None else -1,
    )
