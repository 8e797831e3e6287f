"""How much of the model torch.compile captured (PyTorch CI's calls_captured, fallbacks_to_eager), per compile and at run time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report.stages import SourceLocation


@dataclass(frozen=True)
class FrameCoverage:
    """One compile of a Python frame: the calls its graph captured, or why the frame ran eagerly."""

    compile_id: str
    function: str
    file: str
    line: int
    #: The graph's call_function / call_method / call_module nodes (compilation_metrics' graph_op_count,
    #: torch._dynamo.utils.count_calls): what this compile adds to ``calls_captured``.
    calls_captured: int
    #: Dynamo gave up on the frame and ran it eagerly (PyTorch CI counts it in ``fallbacks_to_eager``).
    eager: bool = False
    fail_type: str = ""  # torch's exception type when eager, e.g. "Unsupported"
    reason: str = ""  # torch's first line of why, when eager
    #: The user line torch gave up at (compilation_metrics' fail_user_frame_*), when torch says.
    user_frame: Optional[SourceLocation] = None


@dataclass(frozen=True)
class EagerIsland:
    """Eager ATen ops the measured call ran at one user line, between or outside compiled regions."""

    file: str
    line: int
    function: str
    code: str = ""  # the user's source line, when readable
    #: The module whose forward the line ran in (its path in the user's model), when the profiler says
    module: str = ""
    ops: int = 0  # top-level ATen ops run there
    time_us: float = 0.0  # their self CPU (on a GPU: device) time, in microseconds
    #: The ATen ops, most run first, e.g. ("aten::add", 4)
    op_counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RuntimeCoverage:
    """Of the ATen ops one measured call of the model ran (torch.profiler), how many ran inside compiled regions
    (``Torch-Compiled Region`` spans, compiled backward nodes) and how many eagerly."""

    ops: int = 0
    compiled_ops: int = 0
    eager_ops: int = 0
    compiled_time_us: float = 0.0
    eager_time_us: float = 0.0
    #: Eager ops by user line, costliest first.
    islands: tuple[EagerIsland, ...] = ()
    #: Why nothing was measured ("" when measured), e.g. a script (no call tcinspect can repeat) or a log.
    not_measured: str = ""


@dataclass(frozen=True)
class Coverage:
    """How much of the model torch.compile captured, with PyTorch CI's names and definitions
    (benchmarks/dynamo/check_graph_breaks.py): ``counters["stats"]["calls_captured"]``,
    ``counters["stats"]["unique_graphs"]`` and ``fallbacks_to_eager`` (``counters["frames"]["total"] - ["ok"]``)."""

    #: "counters": torch's counters of this run, read as it ended; "compilation_metrics": a log, whose
    #: per-compile records (graph_op_count, fail_type) give the same figures.
    source: str
    calls_captured: int
    unique_graphs: int
    fallbacks_to_eager: int
    #: ``sum(counters["graph_break"].values())``, PyTorch CI's graph_breaks: it leaves out the breaks torch does
    #: not resume after (a frame it skips, a data-dependent branch), which ``summary.graph_breaks`` counts.
    #: -1 where torch's counter was not read (a log).
    graph_break_counter: int = -1
    #: Every compile, in order.
    frames: tuple[FrameCoverage, ...] = ()
    #: The measured call's ATen ops, compiled and eager; None where not asked for (older reports).
    runtime: Optional[RuntimeCoverage] = None

    @property
    def eager_frames(self) -> tuple[FrameCoverage, ...]:
        return tuple(f for f in self.frames if f.eager)
