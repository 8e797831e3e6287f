"""What `codegen --bench` measured on the GPU, before it is matched to the report's kernels (pure data).

tcinspect.capturing.gpu_timing fills these; tcinspect.parse.roofline turns them into the report's
``bench`` section, as the structured-trace events (tcinspect.parse.events) become its stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tcinspect.report import EndToEnd, Peak

#: Warm-up launches before the timed ones (the first launch of an extern call may set up a handle).
WARMUP = 3
#: Back-to-back launches of a 1-element kernel that measure the timing overhead (see capturing.gpu_timing._timing_overhead).
BURST = 9
#: Profiled steps of the in-step view, after warm-up steps (capture.gpu_timing runs them).
IN_STEP_STEPS = 10
IN_STEP_WARMUP = 3


@dataclass
class Arg:
    """One tensor argument of a launch: its layout, and whether the kernel reads or writes it."""

    name: str  # the kernel's parameter name, else the position ("0") or keyword
    role: str  # read | write | readwrite | scratch | "" (not stated: decided from the kernel)
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    itemsize: int
    dtype: str  # f32, bf16, ...


@dataclass
class Launch:
    """One intercepted launch: what it was called on and its timed runs (milliseconds)."""

    kind: str  # triton | extern
    name: str
    wrapper: str  # the wrapper module's file
    frame_id: int
    args: list[Arg] = field(default_factory=list)
    scalars: dict[str, Any] = field(default_factory=dict)
    times_ms: list[float] = field(default_factory=list)
    note: str = ""


@dataclass
class Measured:
    """Everything measured on the GPU, before it is matched to the report's kernels."""

    device_name: str
    runs: int
    method: str
    launches: list[Launch]
    wrappers: dict[str, str]  # wrapper file -> its source
    peaks: list[Peak]
    end_to_end: list[EndToEnd]
    tf32: tuple[bool, bool] = (False, True)  # torch.backends: cuda.matmul.allow_tf32, cudnn.allow_tf32
    notes: list[str] = field(default_factory=list)
    #: What timing one launch between CUDA events adds (µs), subtracted from every median.
    launch_overhead_us: float = 0.0
    #: torch.profiler's Chrome trace of STEPS real compiled steps (instep.match reads it); None if not taken
    profile: Optional[dict[str, Any]] = None
    profile_steps: int = 0
