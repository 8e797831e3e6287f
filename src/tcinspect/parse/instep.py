"""Kernel times as they run in the real step: torch.profiler's trace matched to the kernel catalog.

No torch import: ``match`` reads the Chrome trace-event JSON that ``torch.profiler`` exports
(``export_chrome_trace``: CUPTI's GPU kernels with their launch's correlation id, the CUDA runtime
calls, the aten CPU ops and our ``record_function`` step markers), so the matching is tested on a
recorded trace without a GPU.

Matching, per profiled step, in launch order: a generated or user Triton launch is the next GPU kernel
of the same name; an extern launch (``extern_kernels.mm``, ``torch.ops.aten.X``) is every GPU kernel
launched inside the next ``aten::X`` CPU op. GPU kernels left over ran outside the compiled graphs
(eager code between graphs, the optimizer, the loss's backward seed ...).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

STEP_MARK = "tcinspect_step_"
_LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                 "cudaLaunchCooperativeKernel", "cudaGraphLaunch")
_GPU_CATS = ("kernel", "gpu_memset", "gpu_memcpy")


@dataclass(frozen=True)
class Entry:
    """One catalog launch of the step, in launch order."""

    kind: str  # triton | extern (as the launch interception names them)
    name: str  # the wrapper's name: triton_poi_fused_add_0, relu_kernel_0, mm, aten._scaled_dot_product_...


@dataclass
class GpuKernel:
    name: str
    start: float  # GPU timestamps, µs
    dur: float
    launch_ts: float  # CPU timestamp of its launch call, µs
    entry: int = -1  # the catalog entry it was matched to; -1: outside the catalog


@dataclass
class Step:
    start: float
    end: float  # CPU end of the step marker
    kernels: list[GpuKernel] = field(default_factory=list)
    launches: list[float] = field(default_factory=list)  # CPU timestamps of kernel launch calls


@dataclass
class Matched:
    """Per catalog entry: its in-step GPU time in each step (µs) and the GPU kernels it ran as."""

    per_entry_us: list[list[float]]
    per_entry_kernels: list[int]
    steps: list[Step]


def _extern_op(name: str) -> str:
    """The CPU op an extern launch runs as: mm -> aten::mm, aten._foo.default -> aten::_foo, ns.op.default -> ns::op."""
    parts = name.replace("extern_kernels.", "").replace("torch.ops.", "").split(".")
    if len(parts) >= 2:
        return f"{parts[0]}::{parts[1]}"
    return f"aten::{parts[0]}"


def short_kernel_name(name: str) -> str:
    """A CUDA kernel's name without its return type, namespaces, template and parameter lists:
    ``void at::native::elementwise_kernel<128, 2, ...>(int, ...)`` -> ``elementwise_kernel``."""
    text = name[5:] if name.startswith("void ") else name
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "<(" and depth == 0:
            cut = i
            break
    base = text[:cut].strip()
    return base.rsplit("::", 1)[-1] or name


def _triton_match(kernel: str, entry: str) -> bool:
    """Triton names the GPU kernel after the @triton.jit function; a user kernel's wrapper name adds `_<n>`."""
    return kernel == entry or (entry.startswith(kernel + "_") and entry[len(kernel) + 1:].isdigit())


def steps_of(trace: dict[str, Any]) -> list[Step]:
    """The profiled steps with their GPU kernels (by correlation to the launching call), in launch order."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    marks = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(STEP_MARK)
                    and e.get("cat") in ("user_annotation", "cpu_instant_event", "cpu_op", "python_function")),
                   key=lambda e: float(e["ts"]))
    steps = [Step(float(m["ts"]), float(m["ts"]) + float(m.get("dur", 0))) for m in marks]
    launch_ts: dict[Any, float] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is None:
                continue
            launch_ts[corr] = float(e["ts"])  # a kernel launch, a memset or a copy: whatever put GPU work in
            if str(e.get("name", "")).startswith(_LAUNCH_CALLS):
                for s in steps:
                    if s.start <= float(e["ts"]) <= s.end:
                        s.launches.append(float(e["ts"]))
                        break
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in _GPU_CATS:
            continue
        corr = (e.get("args") or {}).get("correlation")
        ts = launch_ts.get(corr)
        if ts is None:
            continue
        for s in steps:
            if s.start <= ts <= s.end:
                s.kernels.append(GpuKernel(str(e.get("name", "")), float(e["ts"]), float(e.get("dur", 0)), ts))
                break
    for s in steps:
        s.kernels.sort(key=lambda k: (k.launch_ts, k.start))
        s.launches.sort()
    return steps


def _cpu_ops(trace: dict[str, Any]) -> list[tuple[float, float, str]]:
    return sorted(((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), str(e.get("name", "")))
                   for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") == "cpu_op"),
                  key=lambda x: (x[0], -x[1]))


def match(trace: dict[str, Any], entries: Sequence[Entry]) -> Matched:
    steps = steps_of(trace)
    ops = _cpu_ops(trace)
    per_entry: list[list[float]] = [[] for _ in entries]
    counts = [0 for _ in entries]
    for s in steps:
        got = [0.0 for _ in entries]
        n = [0 for _ in entries]
        pos = 0  # index into s.kernels
        t = s.start  # CPU time the next launch comes after
        for i, e in enumerate(entries):
            if e.kind == "extern":
                op = _extern_op(e.name)
                rng = next(((a, b) for a, b, name in ops if name == op and a >= t and a <= s.end), None)
                if rng is None:
                    continue
                for k in s.kernels:
                    if k.entry < 0 and rng[0] <= k.launch_ts <= rng[1]:
                        k.entry = i
                        got[i] += k.dur
                        n[i] += 1
                t = rng[1]
            else:
                j = next((j for j in range(pos, len(s.kernels))
                          if s.kernels[j].entry < 0 and s.kernels[j].launch_ts >= t
                          and _triton_match(s.kernels[j].name, e.name)), None)
                if j is None:
                    continue
                k = s.kernels[j]
                k.entry = i
                got[i] += k.dur
                n[i] += 1
                pos, t = j + 1, k.launch_ts
        for i in range(len(entries)):
            if n[i]:
                per_entry[i].append(got[i])
                counts[i] = max(counts[i], n[i])
    return Matched(per_entry, counts, steps)


# ----------------------------------------------------------------------------- the step view

@dataclass(frozen=True)
class Where:
    """What a GPU kernel was, for the step view: its catalog entry's graph and name, or outside."""

    graph: str  # "0/0 forward"; "" outside the compiled graphs
    name: str


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


@dataclass
class StepStats:
    wall_us: float
    busy_us: float
    launches: int
    cpu_between_launches_us: float
    outside_us: float
    outside_kernels: int
    gaps: list[tuple[float, Where, Where]]  # idle µs, the kernel before, the kernel after


def step_stats(s: Step, where_of: Sequence[Where]) -> StepStats:
    ks = sorted(s.kernels, key=lambda k: k.start)
    wall = max([s.end] + [k.start + k.dur for k in ks]) - s.start if ks else s.end - s.start
    busy = _union((k.start, k.start + k.dur) for k in ks)
    gaps = []
    end, prev = None, None
    for k in ks:
        if end is not None and k.start > end:
            gaps.append((k.start - end, prev, k))
        if end is None or k.start + k.dur > end:
            end, prev = k.start + k.dur, k
    outside = [k for k in ks if k.entry < 0]

    def w(k: Optional[GpuKernel]) -> Where:
        if k is None:
            return Where("", "")
        return where_of[k.entry] if k.entry >= 0 else Where("", f"{short_kernel_name(k.name)} (outside the graphs)")

    between = [b - a for a, b in zip(s.launches, s.launches[1:])]
    return StepStats(wall_us=wall, busy_us=busy, launches=len(ks),
                     cpu_between_launches_us=statistics.median(between) if between else 0.0,
                     outside_us=sum(k.dur for k in outside), outside_kernels=len(outside),
                     gaps=sorted(((g, w(a), w(b)) for g, a, b in gaps), key=lambda x: -x[0]))


def verdict(busy_pct: float, idle_us: float, boundary_idle_us: float, launches: int,
            cpu_between_us: float) -> tuple[str, str, str]:
    """(verdict, evidence, suggestion) from the step's numbers."""
    if busy_pct >= 80.0:
        return ("GPU-bound", f"the GPU was busy {busy_pct:.0f}% of the step",
                "look at the slowest kernels and their place on the roofline (codegen --bench --sort peak)")
    if idle_us > 0 and boundary_idle_us >= 0.5 * idle_us:
        return ("CPU-bound between graphs",
                f"the GPU was idle {100 - busy_pct:.0f}% of the step, {boundary_idle_us / idle_us:.0%} of that at graph "
                "boundaries (Python between compiled graphs: graph breaks, eager code)",
                "remove the graph breaks at those boundaries (tcinspect breaks), or compile the whole step")
    return ("launch-bound",
            f"the GPU was idle {100 - busy_pct:.0f}% of the step in small gaps between {launches} launches "
            f"(median {cpu_between_us:.1f} µs of CPU per launch)",
            'CUDA graphs remove per-launch CPU cost: torch.compile(mode="reduce-overhead")')
