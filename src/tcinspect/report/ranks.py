"""Distributed runs: every rank, DDP's buckets, the logs' origins, and where ranks diverge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report.compile_time import CompileTime
from tcinspect.report.stages import CompileMetrics, Graph, InputSetError, Stages
from tcinspect.report.summary import Summary, summarize


@dataclass(frozen=True)
class DdpBucket:
    """One child of a DDPOptimizer split: a subgraph and the parameters of its gradient bucket."""

    name: str  # the split graph's submodule, e.g. "submod_0"
    #: DDPOptimizer's bucket index (as its debug table numbers them): 0 is all-reduced first (the last layers).
    bucket: int
    parameters: tuple[str, ...] = ()  # e.g. "layers.0.0.weight"
    parameter_bytes: int = 0
    graph: Optional[Graph] = None  # optimize_ddp_split_child


@dataclass(frozen=True)
class DdpSplit:
    """DDPOptimizer's split of one Dynamo graph at DDP's bucket boundaries."""

    compile_id: str
    graph: Graph  # optimize_ddp_split_graph: the outer graph, calling each child in turn
    children: tuple[DdpBucket, ...] = ()


@dataclass(frozen=True)
class LogOrigin:
    """What a rank's TORCH_TRACE log says of the process that wrote it: compared across ranks to tell logs of
    one run from logs of several (``Report.mixed_runs``)."""

    #: its first record's date and time as glog writes it, "MM-DD HH:MM:SS.ffffff" (the writer's local time, no year)
    started: str = ""
    pid: int = 0  # the writer's process id (the glog prefix's)
    #: the rank its records state (torch adds ``"rank": N`` once the process group is up); None where none does
    records_rank: Optional[int] = None
    torch_version: str = ""  # compilation_metrics' pytorch_version; "" where torch did not log it
    #: where torch's own code logged each of a few events ("dynamo_start torch/_dynamo/convert_frame.py:231"):
    #: another line is another torch build, even where no version was logged
    torch_lines: tuple[str, ...] = ()
    #: the outermost frame of its first compile's stack ("/home/u/train.py:191"): where the script started it
    script: str = ""
    size: int = 0  # bytes of log text (gunzipped)
    crc32: str = ""  # of the log text, 8 hex digits


@dataclass(frozen=True)
class MixedRun:
    """A sign that the rank logs of a directory are not one run's: what differs, and which ranks have what."""

    #: started (first records an hour or more apart) | torch (another version, or another build's source lines)
    #: | script (another line of the script started the first compile) | process (one process wrote several
    #: ranks' logs) | copy (identical log text) | rank (the records state another rank than the file's)
    what: str
    #: the ranks of each kind ("process", "copy", "rank": only the ranks concerned)
    groups: tuple[RankGroup, ...]


@dataclass(frozen=True)
class RankReport:
    """One rank of a distributed run: how it ended, and its own stages."""

    rank: int
    #: ok | failed (a stage failed) | error (bad input, the model raised) | crashed | timed_out |
    #: stopped (ended by torchrun when another rank failed) | missing (never started)
    status: str
    error: str = ""
    #: The user's line it was at when it crashed, hung or was stopped ("file:line"), when known.
    where: str = ""
    device: str = ""
    stages: Stages = Stages()
    compiles: tuple[CompileMetrics, ...] = ()
    calls: int = 0
    input_errors: tuple[InputSetError, ...] = ()
    ddp_splits: tuple[DdpSplit, ...] = ()
    compile_time: Optional[CompileTime] = None
    #: TORCH_TRACE directories: the log this rank was read from (its name below the directory).
    log: str = ""
    #: TORCH_TRACE directories: what that log says of the process that wrote it (None for an ``--nproc`` rank).
    origin: Optional[LogOrigin] = None
    #: The compiled graphs this rank ran, in order (``Report.graph_execution_order``); () when torch logged none.
    graph_execution_order: tuple[str, ...] = ()

    @property
    def summary(self) -> Summary:
        # the same counts as a whole report's, from this rank's own stages
        return summarize(self.stages, self.compiles, self.compile_time)


@dataclass(frozen=True)
class RankGroup:
    """Ranks that agree on one aspect, and what they had."""

    ranks: tuple[int, ...]
    value: str


@dataclass(frozen=True)
class Divergence:
    """Where ranks differ: one aspect of one compile, and what each group of ranks had."""

    #: The compile id ("0/0"); "" for the run as a whole (e.g. one rank crashed).
    compile_id: str
    #: status | compile | graph | graph_breaks | guards | recompiles | kernels | ddp_split | cache (the FX
    #: graph and AOTAutograd cache outcomes of a compile the ranks agree on) | compile_ids (of the run) |
    #: execution_order (of the run: the first place where ranks ran their compiled graphs in another order)
    aspect: str
    groups: tuple[RankGroup, ...]
