"""CUDA graphs under ``mode="reduce-overhead"``: what each compiled graph and partition did."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CudaGraphRecording:
    """One CUDA graph recording of a compiled graph (torch's ``CUDAGraphNode.record`` span)."""

    #: the model call during which it was recorded (0: example_inputs, k: input_sets[k - 1]); -1 unknown
    call: int
    record_time_s: float = 0.0


@dataclass(frozen=True)
class PartitionOp:
    """One operation of a partition torch could not CUDA-graph, as its scheduler logged it (``cudagraphs`` debug log:
    ``Scheduler._log_graph_partitions``)."""

    node: str  # Inductor's name of the operation ("op3", "buf2")
    reason: str  # torch's reason (Scheduler.should_partition): "cpu ops", "DeviceCopy ops", "dynamic shape ops", ...
    ir: str = ""  # its IR type ("ComputedBuffer", "DeviceCopy")
    fx: str = ""  # the FX node it came from, as torch writes it ("mul(args = (...))")
    user_lines: tuple[str, ...] = ()  # "file:line" of the user code, from the node's stack trace


@dataclass(frozen=True)
class PartitionRecording:
    """One CUDA graph recording of one partition (torch's "Recording function=partition_0, ..." debug line)."""

    call: int  # the model call it was recorded during (-1 unknown)
    cuda_graph_id: int = -1  # torch's GraphID of the recording (one per capture, per device)
    #: for a recording after the first: why the same partition was recorded again, as torch's tree says: its
    #: re-record reason ("static input data pointer changed"), "new symint key" (a new FunctionID: another value of
    #: its int inputs), or "recorded again" (the same function on another path of the tree)
    cause: str = ""


@dataclass(frozen=True)
class CudaGraphPartition:
    """One partition of a compiled graph under graph partitioning: Inductor splits a graph around what cannot be
    CUDA-graphed and CUDA-graphs the rest, one partition at a time."""

    index: int  # among all the graph's partitions, in order (torch's "Partition N")
    cudagraphable: bool
    function: str = ""  # the wrapper's function of a cudagraphable one ("partition_0"), recorded on its own
    nodes: int = 0  # scheduler nodes (torch's count; 0 where only the output code says)
    #: torch's reasons, for one that is not cudagraphable (its ops' reasons, each once)
    reasons: tuple[str, ...] = ()
    ops: tuple[PartitionOp, ...] = ()
    user_lines: tuple[str, ...] = ()  # its ops' user lines, each once
    #: its kernel launches, by their index in the graph's output code (OutputCode.kernels, KernelTiming.index)
    kernel_indices: tuple[int, ...] = ()
    recordings: tuple[PartitionRecording, ...] = ()

    @property
    def kernels(self) -> int:
        return len(self.kernel_indices)

    @property
    def rerecordings(self) -> int:
        return max(0, len(self.recordings) - 1)


@dataclass(frozen=True)
class CudaGraphUse:
    """What CUDA graphs did with one compiled graph (forward, backward or inference) of one compile."""

    compile_id: str
    part: str  # forward, backward or inference ("" when torch's record names no graph)
    #: recorded: captured as a CUDA graph (at least once) · skipped: torch decided not to (``reason``) ·
    #: not recorded: neither a recording nor a skip was logged (e.g. it only ran its warm-up call)
    status: str
    reason: str = ""  # torch's skip message, without "skipping cudagraphs due to"
    user_lines: tuple[str, ...] = ()  # "file:line" from the stack torch attached to the skip ("Found from")
    recordings: tuple[CudaGraphRecording, ...] = ()
    #: torch's runtime_cudagraphify_time_us for this graph (compilation_metrics_runtime), summed
    cudagraphify_time_s: float = 0.0
    #: under graph partitioning (torch's default outside fbcode): the graph's partitions, in order; empty when
    #: Inductor did not partition it (graph_partition off, a CPU graph)
    partitions: tuple[CudaGraphPartition, ...] = ()
    #: where the partitions come from: "scheduler" (torch's cudagraphs debug log, in a capture) or "output code"
    #: (the wrapper's partition functions alone: no reasons, no ops)
    partitions_from: str = ""
    kernels: int = 0  # kernel launches of the graph (the output code)
    #: of those, the ones inside a CUDA graph: in a cudagraphable partition of a recorded graph (all of a recorded
    #: graph that was not partitioned)
    kernels_in_cudagraphs: int = 0

    @property
    def rerecordings(self) -> int:
        if any(p.recordings for p in self.partitions):
            return sum(p.rerecordings for p in self.partitions)
        # per partition recordings unknown (a log): each cudagraphable partition records once before any again
        first = sum(1 for p in self.partitions if p.cudagraphable) or 1
        return max(0, len(self.recordings) - first)


@dataclass(frozen=True)
class CudaGraphs:
    """CUDA graphs under ``mode="reduce-overhead"`` (or another mode that turns them on)."""

    graphs: tuple[CudaGraphUse, ...] = ()
    #: skip messages torch logged (cudagraph_utils.log_cudagraph_skip_and_bump_counter): its
    #: ``counters["inductor"]["cudagraph_skips"]`` on a CUDA device
    skips: int = 0
    #: what the source could not hold or the run could not show, said plainly (empty when nothing)
    notes: tuple[str, ...] = ()
    #: graphs nothing was captured for that torch logged no skip for (no cudagraphable partition: torch then says
    #: nothing, pytorch#193044); ``check --max-cudagraph-skips`` counts them with ``skips``
    unlogged_skips: int = 0

    @property
    def recordings(self) -> int:
        return sum(len(g.recordings) for g in self.graphs)

    @property
    def rerecordings(self) -> int:
        return sum(g.rerecordings for g in self.graphs)

    @property
    def partitions(self) -> int:
        return sum(len(g.partitions) for g in self.graphs)

    @property
    def kernels(self) -> int:
        return sum(g.kernels for g in self.graphs)

    @property
    def kernels_in_cudagraphs(self) -> int:
        return sum(g.kernels_in_cudagraphs for g in self.graphs)
