"""``codegen --bench``: every kernel timed on the GPU, on the roofline, and the real step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Peak:
    """A roofline ceiling the kernels are compared with, and where its number comes from."""

    #: memory_bandwidth (theoretical) | copy_bandwidth (measured, the practical roof) | compute
    kind: str
    value: float
    unit: str  # "GB/s" (1e9 bytes per second) | "TFLOP/s" (1e12 FLOP per second)
    source: str  # how it was obtained, e.g. "device properties: 2619 MHz memory clock × 5120-bit bus × 2"
    dtype: str = ""  # compute peaks: bf16 | f16 | tf32 | f32 | f64


@dataclass(frozen=True)
class KernelTiming:
    """One kernel launch of the benchmarked call: its GPU time, what it moved, its place on the roofline."""

    compile_id: str
    part: str  # forward | backward | inference
    index: int  # its position in that output's kernels (OutputCode.kernels[index])
    name: str
    kind: str  # as Kernel.kind
    #: Median GPU time over ``runs`` runs, in microseconds, less KernelBench.launch_overhead_us;
    #: 0 when not timed (``note`` says why).
    median_us: float = 0.0
    min_us: float = 0.0
    runs: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    flops: int = 0  # matmul / convolution / attention work; 0 for other kernels
    dtype: str = ""  # the math the FLOPs ran in (bf16, f16, tf32, f32), which picks the compute peak
    gb_per_s: float = 0.0  # (bytes_read + bytes_written) / median time
    pct_of_bandwidth: float = 0.0  # of the theoretical memory bandwidth
    pct_of_copy: float = 0.0  # of the measured device-to-device copy bandwidth
    tflop_per_s: float = 0.0
    pct_of_compute: float = 0.0  # of the compute peak for ``dtype``
    #: memory | compute: the roof its arithmetic intensity puts it under; latency: too small to reach either
    bound: str = ""
    pct_of_roofline: float = 0.0  # achieved / attainable at its arithmetic intensity
    share: float = 0.0  # percent of the summed kernel time
    note: str = ""
    #: Its GPU time in the real step (µs, the median over StepProfile.steps profiled steps, all the GPU
    #: kernels it ran as, e.g. two for a cuBLAS call); 0 when not matched. Warm L2, real ordering.
    in_step_us: float = 0.0
    in_step_kernels: int = 0  # the GPU kernels this launch ran as in one step


@dataclass(frozen=True)
class StepGap:
    """A stretch of the step with the GPU idle, and the kernels on either side."""

    idle_us: float
    after: str  # "0/0 forward triton_poi_fused_add_0", or a kernel outside the compiled graphs
    before: str
    boundary: str = ""  # "graph boundary" when the two sides are different graphs (or one is outside them)


@dataclass(frozen=True)
class TimeShare:
    """GPU time of the step spent on kernels from one user line or one module."""

    key: str  # "file.py:12" or a module path
    us: float
    pct: float  # of the in-step kernel time of the compiled graphs


@dataclass(frozen=True)
class StepProfile:
    """The real compiled step under torch.profiler (CUPTI), kernel events matched to the catalog."""

    steps: int
    method: str
    wall_us: float  # median step: from the step's start on the CPU to the last kernel's end on the GPU
    gpu_busy_us: float  # union of the step's GPU kernel intervals
    gpu_busy_pct: float
    launches: int  # GPU kernels per step
    cpu_between_launches_us: float  # median CPU time from one kernel launch call to the next
    in_graph_us: float  # summed in-step time of the catalog's kernels
    outside_us: float  # GPU kernels outside the compiled graphs (eager code, optimizer, ...)
    outside_kernels: int
    verdict: str  # GPU-bound | launch-bound | CPU-bound between graphs
    evidence: str
    suggestion: str
    gaps: tuple[StepGap, ...] = ()
    by_line: tuple[TimeShare, ...] = ()
    by_module: tuple[TimeShare, ...] = ()


@dataclass(frozen=True)
class EndToEnd:
    """Eager against compiled: wall time per call, the median of ``runs`` synchronised calls."""

    what: str  # forward | forward+backward
    eager_ms: float
    compiled_ms: float
    speedup: float  # eager_ms / compiled_ms
    runs: int


@dataclass(frozen=True)
class KernelBench:
    """Every kernel of one compiled call timed on the GPU, against the device's peaks."""

    device_name: str  # e.g. "NVIDIA H100 80GB HBM3"
    runs: int
    method: str  # how each kernel was timed
    peaks: tuple[Peak, ...] = ()
    kernels: tuple[KernelTiming, ...] = ()  # in launch order
    end_to_end: tuple[EndToEnd, ...] = ()
    total_us: float = 0.0  # the summed median kernel time
    #: What timing one launch alone between CUDA events adds over its cost in a stream of launches
    #: (µs): measured with a 1-element kernel, subtracted from every time.
    launch_overhead_us: float = 0.0
    notes: tuple[str, ...] = ()
    step: Optional[StepProfile] = None  # the real step under the profiler (in-step times, where time goes)
