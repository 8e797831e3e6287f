"""The report: everything tcinspect recorded about one torch.compile run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from tcinspect.report.bench import KernelBench
from tcinspect.report.compile_time import CompileTime
from tcinspect.report.coverage import Coverage
from tcinspect.report.cudagraphs import CudaGraphs
from tcinspect.report.exports import ExportRun
from tcinspect.report.guard_cost import GuardCost
from tcinspect.report.memory import Memory
from tcinspect.report.options import Options
from tcinspect.report.parse_health import ParseHealth
from tcinspect.report.passes import PassRun
from tcinspect.report.ranks import Divergence, MixedRun, RankReport
from tcinspect.report.regions import Regions
from tcinspect.report.shapes import Shapes
from tcinspect.report.stages import (
    FAILED,
    CompileMetrics,
    InputSetError,
    Stages,
    Target,
)
from tcinspect.report.summary import Failure, Summary, summarize
from tcinspect.report.verification import Verification

if TYPE_CHECKING:  # the annotations of Report's views (show, save) alone
    import os
    from collections.abc import Sequence
    from pathlib import Path

#: Bumped whenever a saved report of the previous version cannot be read as it is.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Report:
    """Everything tcinspect recorded about one torch.compile run."""

    torch_version: str
    device: str
    target: Target
    options: Options = Options()
    stages: Stages = Stages()
    compiles: tuple[CompileMetrics, ...] = ()
    #: "" when the run completed; else what stopped it (the stage statuses say where).
    error: str = ""
    #: How many calls were made: example_inputs plus each input set that was run; for a script, its calls
    #: into what it compiled (a compiled function calling another counts once).
    calls: int = 0
    input_errors: tuple[InputSetError, ...] = ()
    passes: tuple[PassRun, ...] = ()
    verification: Optional[Verification] = None
    exports: tuple[ExportRun, ...] = ()
    tcinspect_version: str = ""
    schema_version: int = SCHEMA_VERSION
    #: A distributed run (``--nproc``): every rank, rank 0 included; the fields above are rank 0's.
    ranks: tuple[RankReport, ...] = ()
    #: ``codegen --bench``: every kernel timed on the GPU and placed on the roofline.
    bench: Optional[KernelBench] = None
    #: Set only when the parser met something it did not understand (see ParseHealth).
    parse: Optional[ParseHealth] = None
    #: Seconds spent compiling (wall), kept apart so that reports diff cleanly.
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)
    #: Where compile time went, phase by phase (``tcinspect compile-time``); None for older reports.
    compile_time: Optional[CompileTime] = None
    #: Set when the run failed (``error`` is set): what kind of failure, for the exit code. None for a report
    #: saved before failures were typed.
    failure: Optional[Failure] = None
    #: CUDA graphs (``--mode reduce-overhead``): what was captured, skipped and re-recorded; None when off.
    cudagraphs: Optional[CudaGraphs] = None
    #: Dynamic shapes: symbols, specializations, shape guards (``tcinspect shapes``); None when torch logged none.
    shapes: Optional[Shapes] = None
    #: What the guards cost on every call: torch's guard latency per compile, the guards evaluated in Python,
    #: and (``guards --per-call``) calls timed under torch.profiler. Measured, so kept apart like ``timings``.
    guard_cost: Optional[GuardCost] = field(default=None, compare=False)
    #: Regional compilation (``nested_compile_region``, per-block ``torch.compile``): each region's calls and
    #: reuse. None when the run compiled no region.
    regions: Optional[Regions] = None
    #: What each AOT forward graph saves for backward, Inductor's peak estimates, and (on a GPU) the measured
    #: peaks (``tcinspect memory``); None when no graph has a backward.
    memory: Optional[Memory] = None
    #: The compiled graphs the process ran, in order: each call's compile id ("?" where torch gave none), from
    #: Inductor's ``graph_execution`` record (``torch._inductor.debug.record_and_log_graph_execution_order``);
    #: () when torch logged none.
    graph_execution_order: tuple[str, ...] = ()
    #: A distributed run: where its ranks differ, found as the ranks were merged (``parse.merge``). Derived
    #: from ``ranks``, so compared through them.
    divergence: tuple[Divergence, ...] = field(default=(), compare=False)
    #: A TORCH_TRACE directory: signs that its rank logs are not one run's (another day, another torch or
    #: script, copies), found as the ranks were merged from their ``origin``. Derived, so compared through them.
    mixed_runs: tuple[MixedRun, ...] = field(default=(), compare=False)
    #: How much of the model torch.compile captured (PyTorch CI's calls_captured, unique_graphs,
    #: fallbacks_to_eager), per compile, and (a model file) at run time. None for reports saved before it.
    coverage: Optional[Coverage] = None

    @property
    def summary(self) -> Summary:
        return summarize(self.stages, self.compiles, self.compile_time, self.coverage)

    @property
    def ok(self) -> bool:
        return not self.error and all(
            s.status != FAILED for s in (self.stages.dynamo, self.stages.aot_autograd, self.stages.inductor)
        )

    def replace(self, **changes: Any) -> Report:
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        """One line: what ran and the headline counts (the whole tree is ``tcinspect.serialize.to_dict``)."""
        s, t = self.summary, self.target
        what = t.path or t.model_name or t.kind
        status = "ok" if self.ok else f"failed ({self.failure.kind})" if self.failure is not None else "failed"
        ranks = f", ranks={len(self.ranks)}" if self.ranks else ""
        return (f"Report(target={what!r}, torch={self.torch_version!r}, device={self.device!r}, "
                f"backend={self.options.backend!r}{ranks}, graphs={s.graphs}, graph_breaks={s.graph_breaks}, "
                f"recompiles={s.recompiles}, guards={s.guards}, kernels={s.kernels}, "
                f"compile_time_s={s.compile_time_s:g}, status={status!r})")

    def _repr_html_(self) -> str:
        """The report in a notebook cell: its findings, summary and every section with content."""
        from tcinspect import display

        return display.views().html(self)

    def show(self, stages: Optional[Union[str, Sequence[str]]] = None) -> None:
        """Print the tables ``tcinspect trace`` prints; ``stages`` picks some, as ``--stage`` does."""
        from tcinspect import display

        display.views().show(self, stages)

    def save(self, path: Union[str, os.PathLike[str]]) -> Path:
        """Write the report to ``path``: .yaml or .json (``tcinspect.load_report`` reads it back) or .html (the page)."""
        from tcinspect import display

        saved: Path = display.views().save(self, path)
        return saved
