"""`codegen --bench`: time every kernel one compiled call launches on a CUDA GPU, and place it on the roofline.

One more call of the compiled model (forward, and backward when the capture ran it) runs with
every kernel launch an Inductor wrapper makes intercepted (``_compat.intercept_launches``). Each
launch's tensor arguments are copied (views keep their storage layout), the kernel is replayed on
the copies — a few warm-up launches, then ``runs`` launches, each between two CUDA events, after
an L2 flush and a GPU hold long enough for the launch to be queued first — and the real launch
then proceeds untouched. What timing a launch alone adds over the same launch in a stream of
launches (about 2 µs) is measured with a 1-element kernel and subtracted, so a tiny kernel's time
is its cost in a stream: a profiler's kernel duration plus the ~1 µs gap before the next kernel
starts. Replaying the launch the
model really made times every kind of kernel the same way: generated and user Triton kernels, and
the extern ``mm``/``addmm``/``bmm``/``convolution`` and ``torch.ops.aten`` calls.

Bytes read and written come from the argument tensors' sizes and dtypes (each tensor counted once,
an in/out tensor once each way); FLOPs from matmul, convolution and attention shapes. The peaks
compared against are sourced: the theoretical memory bandwidth from the device properties (else
NVIDIA's datasheet), a measured device-to-device copy as the practical roof, and the dense compute
peak for the dtype from the datasheet (else a measured large matmul).

The arithmetic (bytes, FLOPs, the roofline, matching launches to the report's kernels) is plain
Python; torch is imported only by the functions that measure.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from tcinspect.errors import DeviceError, UsageError
from tcinspect.report import (EndToEnd, KernelBench, KernelTiming, OutputCode, Options, Peak, Report, StepGap,
                              StepProfile, TimeShare)

#: Warm-up launches before the timed ones (the first launch of an extern call may set up a handle).
WARMUP = 3
#: A kernel whose time at the roofline would be under this is bound by the fixed cost of a launch
#: on the GPU (a microsecond or two) rather than by bandwidth or compute.
LATENCY_US = 2.0
#: Back-to-back launches of a 1-element kernel that measure the timing overhead (see _timing_overhead).
BURST = 9


# ----------------------------------------------------------------------------- what was measured


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


# ----------------------------------------------------------------------------- arithmetic (no torch)


def tensor_bytes(shape: Sequence[int], stride: Sequence[int], itemsize: int) -> int:
    """Bytes a tensor spans once: broadcast (stride-0) dimensions are counted once."""
    if any(s == 0 for s in shape):
        return 0
    n = 1
    for size, step in zip(shape, stride):
        if step != 0:
            n *= size
    return n * itemsize


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def traffic(args: Iterable[Arg]) -> tuple[int, int]:
    """(bytes read, bytes written): an in/out tensor counts both ways, scratch space neither."""
    read = written = 0
    for a in args:
        b = tensor_bytes(a.shape, a.stride, a.itemsize)
        if a.role in ("read", "readwrite"):
            read += b
        if a.role in ("write", "readwrite"):
            written += b
    return read, written


_IDENT = re.compile(r"[A-Za-z_]\w*")
_STORE = re.compile(r"\btl\.(?:store|atomic_\w+)\(")


def _first_argument(text: str, start: int) -> str:
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return text[start:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return text[start:i]
    return text[start:]


def stored_names(source: str) -> set[str]:
    """Names a Triton kernel stores through (``tl.store`` / ``tl.atomic_*``), followed through assignments."""
    assigned: dict[str, set[str]] = {}
    for m in re.finditer(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$", source, re.M):
        assigned.setdefault(m[1], set()).update(_IDENT.findall(m[2]))
    found: set[str] = set()
    for m in _STORE.finditer(source):
        todo = set(_IDENT.findall(_first_argument(source, m.end())))
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo |= assigned.get(name, set())
    return found


def resolve_roles(kind: str, args: Sequence[Arg], kernel_source: str = "") -> list[Arg]:
    """Every argument with a role: what torch stated, else Inductor's parameter names
    (``in_ptr``/``out_ptr``/``in_out_ptr``), else, for a user Triton kernel, the pointers its
    source stores through; anything else is read."""
    stores: Optional[set[str]] = None
    out = []
    for a in args:
        role = a.role
        if not role and kind == "triton":
            if a.name.startswith("in_out_ptr"):
                role = "readwrite"
            elif a.name.startswith("out_ptr"):
                role = "write"
            elif a.name.startswith("ws_ptr"):
                role = "scratch"
            elif a.name.startswith(("in_ptr", "arg_")):
                role = "read"
            else:
                if stores is None:
                    stores = stored_names(kernel_source)
                role = "write" if a.name in stores or (not stores and "out" in a.name) else "read"
        out.append(replace(a, role=role or "read"))
    return out


def _op(name: str) -> str:
    """``aten.mm.default`` -> ``mm``; ``mm`` -> ``mm``."""
    parts = name.split(".")
    return parts[1] if parts[0] in ("aten", "prims") and len(parts) > 1 else parts[0]


def _math_dtype(dtype: str, tf32: bool) -> str:
    return "tf32" if dtype == "f32" and tf32 else dtype


def _matmul(a: Arg, b: Arg) -> int:
    """2·M·K·N (times the batch for bmm)."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        return 0
    return 2 * _numel(a.shape) * b.shape[-1]


def _conv(x: Arg, w: Arg, out: Optional[Arg], transposed: bool) -> int:
    """2 × (each output element, or each input element when transposed) × the weights it meets."""
    per = _numel(w.shape[1:])
    if transposed:
        return 2 * _numel(x.shape) * per
    return 2 * _numel(out.shape) * per if out is not None else 0


def _attention(q: Arg, k: Arg, v: Arg, causal: bool, backward: bool) -> int:
    """Q·Kᵀ and P·V: 2·batch·L·S·(E + Ev); backward ≈ 2.5× forward; causal halves it."""
    if len(q.shape) < 2:
        return 0
    batch, length, e = _numel(q.shape[:-2]), q.shape[-2], q.shape[-1]
    flops = 2 * batch * length * k.shape[-2] * (e + v.shape[-1])
    if backward:
        flops = flops * 5 // 2
    return flops // 2 if causal else flops


def flops_of(kind: str, name: str, args: Sequence[Arg], scalars: dict[str, Any],
             tf32: tuple[bool, bool] = (False, True)) -> tuple[int, str]:
    """(FLOPs, the math's dtype) of a matmul, convolution or attention launch; (0, "") for others.

    ``args`` carry their roles (see resolve_roles); ``tf32`` is torch.backends' cuda.matmul.allow_tf32
    and cudnn.allow_tf32: float32 matmuls and convolutions run in TF32 when allowed.
    """
    named = {a.name: a for a in args}
    ins = [a for a in args if a.role in ("read", "readwrite")]
    outs = [a for a in args if a.role in ("write", "readwrite")]
    if kind == "triton":  # Inductor's templates name their operands arg_A/arg_B (mm) and arg_X/arg_W (conv)
        if "arg_A" in named and "arg_B" in named:
            a = named["arg_A"]
            return _matmul(a, named["arg_B"]), _math_dtype(a.dtype, tf32[0])
        if "arg_X" in named and "arg_W" in named:
            x = named["arg_X"]
            return _conv(x, named["arg_W"], outs[0] if outs else None, False), _math_dtype(x.dtype, tf32[1])
        return 0, ""
    op = _op(name)
    if op in ("mm", "bmm") and len(ins) >= 2:
        return _matmul(ins[0], ins[1]), _math_dtype(ins[0].dtype, tf32[0])
    if op in ("addmm", "baddbmm") and len(ins) >= 3:
        return _matmul(ins[1], ins[2]), _math_dtype(ins[1].dtype, tf32[0])
    if op in ("convolution", "_convolution") and len(ins) >= 2:
        transposed = bool(scalars.get("transposed", scalars.get("6", False)))
        return _conv(ins[0], ins[1], outs[0] if outs else None, transposed), _math_dtype(ins[0].dtype, tf32[1])
    if op == "convolution_backward" and {"grad_output", "input", "weight"} <= named.keys():
        transposed = bool(scalars.get("transposed", False))
        mask = scalars.get("output_mask") or [True, True, True]
        fwd = _conv(named["input"], named["weight"], named["grad_output"], transposed)
        return fwd * (int(bool(mask[0])) + int(bool(mask[1]))), _math_dtype(named["input"].dtype, tf32[1])
    if op.startswith("_scaled_dot_product") and {"query", "key", "value"} <= named.keys():
        q = named["query"]
        causal = bool(scalars.get("is_causal", False))
        return _attention(q, named["key"], named["value"], causal, op.endswith("_backward")), q.dtype
    return 0, ""


def _sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant digits (tiny kernels reach only fractions of a GB/s)."""
    return float(f"{x:.{digits}g}")


def roofline(median_us: float, nbytes: int, flops: int, bandwidth: float, copy: float,
             compute: float, latency_us: float = LATENCY_US) -> dict[str, Any]:
    """Where one kernel lies: achieved GB/s and TFLOP/s, as % of each peak, which roof bounds it.

    ``bandwidth`` and ``copy`` are GB/s (1e9 B/s), ``compute`` TFLOP/s for the kernel's dtype;
    0 means unknown. The roof at the kernel's arithmetic intensity I = FLOPs/bytes is
    min(compute, I × bandwidth): past the ridge point a kernel is compute-bound.
    """
    out: dict[str, Any] = {"gb_per_s": 0.0, "pct_of_bandwidth": 0.0, "pct_of_copy": 0.0, "tflop_per_s": 0.0,
                           "pct_of_compute": 0.0, "bound": "", "pct_of_roofline": 0.0}
    if median_us <= 0:
        return out
    seconds = median_us * 1e-6
    gbs = nbytes / seconds / 1e9
    tflops = flops / seconds / 1e12
    roof_bw = bandwidth or copy
    out["gb_per_s"] = _sig(gbs)
    out["pct_of_bandwidth"] = _sig(100 * gbs / bandwidth) if bandwidth else 0.0
    out["pct_of_copy"] = _sig(100 * gbs / copy) if copy else 0.0
    out["tflop_per_s"] = _sig(tflops)
    out["pct_of_compute"] = _sig(100 * tflops / compute) if compute and flops else 0.0
    memory_s = nbytes / (roof_bw * 1e9) if roof_bw else 0.0
    compute_s = flops / (compute * 1e12) if compute and flops else 0.0
    if compute_s > memory_s:
        bound, achieved = "compute", out["pct_of_compute"]
    else:
        bound, achieved = "memory", _sig(100 * gbs / roof_bw) if roof_bw else 0.0
    if max(memory_s, compute_s) * 1e6 < latency_us:
        bound = "latency"
    out["bound"] = bound if roof_bw or compute_s else ""
    out["pct_of_roofline"] = achieved
    return out


# ----------------------------------------------------------------------------- matching and summary


def _match_wrappers(outputs: Sequence[OutputCode], wrappers: dict[str, str],
                    launches: Sequence[Launch]) -> dict[str, int]:
    """Wrapper file -> index of the report output it is: the same code, else the most kernel names shared."""
    found: dict[str, int] = {}
    for path, text in wrappers.items():
        same = [i for i, o in enumerate(outputs) if o.wrapper.strip() == text.strip()]
        if same:
            found[path] = same[0]
            continue
        names = {x.name for x in launches if x.wrapper == path}
        overlap = [(len(names & {k.name for k in o.kernels}), -i) for i, o in enumerate(outputs)]
        if overlap and max(overlap)[0] > 0:
            found[path] = -max(overlap)[1]
    return found


def _align(outputs: Sequence[OutputCode], launches: Sequence[Launch],
           by_file: dict[str, int]) -> tuple[list[tuple[int, int, Optional[Launch]]], list[Launch]]:
    """Each launch against its output's kernel list, in order: (output, kernel index, launch or None).

    A wrapper call is one run through its output's kernels; a kernel the call did not hand over
    (a C++ kernel, a call tcinspect does not intercept) gets a row without a launch.
    """
    rows: list[tuple[int, int, Optional[Launch]]] = []
    stray: list[Launch] = []
    current, frame, pos = -1, None, 0

    def close() -> None:
        if current >= 0:
            rows.extend((current, i, None) for i in range(pos, len(outputs[current].kernels)))

    for launch in launches:
        oi = by_file.get(launch.wrapper, -1)
        names = [k.name for k in outputs[oi].kernels] if oi >= 0 else []
        if launch.name not in names:
            stray.append(launch)
            continue
        if not (oi == current and frame == launch.frame_id and launch.name in names[pos:]):
            close()
            current, frame, pos = oi, launch.frame_id, 0
        j = names.index(launch.name, pos)
        rows.extend((oi, i, None) for i in range(pos, j))
        rows.append((oi, j, launch))
        pos = j + 1
    close()
    return rows, stray


def _less_overhead(ms: float, overhead_us: float) -> float:
    """A CUDA-event time in ms as GPU time in µs: less the fixed cost of timing one launch (never below 10 ns)."""
    return max(ms * 1e3 - overhead_us, 0.01)


def _timing(o: Optional[OutputCode], index: int, kind: str, name: str, launch: Optional[Launch],
            source: str, m: Measured, bandwidth: float, copy: float, compute: dict[str, float]) -> KernelTiming:
    base = dict(compile_id=o.compile_id if o else "", part=o.part if o else "", index=index, name=name, kind=kind)
    if launch is None:
        k = o.kernels[index] if o else None
        why = ("a C++ kernel: it runs on the CPU" if k is not None and k.language == "cpp"
               else "not handed over by the wrapper call (not intercepted)")
        return KernelTiming(**base, note=f"not timed: {why}")
    if not launch.times_ms:
        return KernelTiming(**base, note=launch.note or "not timed")
    args = resolve_roles(launch.kind, launch.args, source)
    read, written = traffic(args)
    flops, dtype = flops_of(launch.kind, launch.name, args, launch.scalars, m.tf32)
    median_us = _less_overhead(statistics.median(launch.times_ms), m.launch_overhead_us)
    place = roofline(median_us, read + written, flops, bandwidth, copy, compute.get(dtype, 0.0))
    return KernelTiming(**base, median_us=round(median_us, 3),
                        min_us=round(_less_overhead(min(launch.times_ms), m.launch_overhead_us), 3),
                        runs=len(launch.times_ms), bytes_read=read, bytes_written=written, flops=flops, dtype=dtype,
                        note=launch.note, **place)


def compute_dtypes(launches: Iterable[Launch], tf32: tuple[bool, bool]) -> set[str]:
    """The dtypes whose compute peak the launches need."""
    out = set()
    for x in launches:
        flops, dtype = flops_of(x.kind, x.name, resolve_roles(x.kind, x.args), x.scalars, tf32)
        if flops and dtype:
            out.add(dtype)
    return out


def summarize(rep: Report, m: Measured) -> KernelBench:
    """The measurements matched to the report's kernels, in launch order, and placed on the roofline."""
    outputs = rep.stages.inductor.outputs
    peak = {p.kind: p.value for p in m.peaks if p.kind != "compute"}
    bandwidth, copy = peak.get("memory_bandwidth", 0.0), peak.get("copy_bandwidth", 0.0)
    compute = {p.dtype: p.value for p in m.peaks if p.kind == "compute"}
    rows, stray = _align(outputs, m.launches, _match_wrappers(outputs, m.wrappers, m.launches))
    timings = []
    for oi, index, launch in rows:
        o = outputs[oi]
        k = o.kernels[index]
        timings.append(_timing(o, index, k.kind, k.name, launch, k.source, m, bandwidth, copy, compute))
    for launch in stray:
        timings.append(replace(_timing(None, -1, launch.kind, launch.name, launch, "", m, bandwidth, copy, compute),
                               note="launched by a wrapper this report does not hold"))
    total = sum(t.median_us for t in timings)
    timings = [replace(t, share=round(100 * t.median_us / total, 1) if total else 0.0) for t in timings]
    notes = list(m.notes)
    ran = {oi for oi, _, launch in rows if launch is not None}
    for oi, o in enumerate(outputs):
        if oi not in ran and o.kernels:
            notes.append(f"{o.compile_id} {o.part}: not run by example_inputs, so its kernels are not timed")
    if not m.launches:
        notes.append("no kernel launch was seen: the compiled call launched none from Python (CUDA graphs, "
                     "e.g. mode=reduce-overhead, or the C++ wrapper replay them)")
    step = None
    if m.profile is not None:
        timings, step = _in_step(outputs, rows, stray, timings, m)
        if step is None:
            notes.append("the profiled steps' kernels could not be matched to the catalog (no step marker seen)")
    return KernelBench(device_name=m.device_name, runs=m.runs, method=m.method, peaks=tuple(m.peaks),
                       kernels=tuple(timings), end_to_end=tuple(m.end_to_end), total_us=round(total, 3),
                       launch_overhead_us=m.launch_overhead_us, notes=tuple(notes), step=step)


IN_STEP_METHOD = ("the compiled step run {steps} times under torch.profiler (CUDA activity through CUPTI) after "
                  "{warm} warm-up steps; each GPU kernel matched to the catalog in launch order (a Triton launch: "
                  "the next GPU kernel of its name; an extern launch: the GPU kernels launched inside its aten op); "
                  "per kernel the median over the steps; warm L2, the real order and concurrency")


def _in_step(outputs: Sequence[OutputCode], rows: list, stray: list, timings: list[KernelTiming],
             m: Measured) -> tuple[list[KernelTiming], Optional[StepProfile]]:
    """Each timed launch's in-step time and the step view, from the profiled steps."""
    from tcinspect.recording import instep

    assert m.profile is not None
    entries = [instep.Entry("extern" if x.kind == "extern" else "triton", x.name) for x in m.launches]
    matched = instep.match(m.profile, entries)
    if not matched.steps:
        return timings, None
    position = {id(x): i for i, x in enumerate(m.launches)}
    launched = [launch for _, _, launch in rows] + list(stray)
    where = [instep.Where("", x.name) for x in m.launches]
    for (oi, index, launch) in rows:
        if launch is not None:
            o = outputs[oi]
            where[position[id(launch)]] = instep.Where(f"{o.compile_id} {o.part}", o.kernels[index].name)
    out = []
    for t, launch in zip(timings, launched):
        i = position.get(id(launch)) if launch is not None else None
        if i is not None and matched.per_entry_us[i]:
            t = replace(t, in_step_us=round(statistics.median(matched.per_entry_us[i]), 3),
                        in_step_kernels=matched.per_entry_kernels[i])
        out.append(t)
    stats = [instep.step_stats(s, where) for s in matched.steps]
    med = statistics.median
    wall, busy = med([x.wall_us for x in stats]), med([x.busy_us for x in stats])
    busy_pct = 100.0 * busy / wall if wall else 0.0
    mid = stats[len(stats) // 2]
    gaps = []
    boundary_idle = 0.0
    for idle, a, b in mid.gaps:
        boundary = "graph boundary" if (a.graph != b.graph or not a.graph) else ""
        if boundary:
            boundary_idle += idle
        if len(gaps) < 5:
            gaps.append(StepGap(round(idle, 1), f"{a.graph} {a.name}".strip(), f"{b.graph} {b.name}".strip(), boundary))
    idle_total = sum(g for g, _, _ in mid.gaps)
    launches = int(med([x.launches for x in stats]))
    between = med([x.cpu_between_launches_us for x in stats])
    v, evidence, suggestion = instep.verdict(busy_pct, idle_total, boundary_idle, launches, between)
    in_graph = sum(t.in_step_us for t in out)
    by_line: dict[str, float] = {}
    by_module: dict[str, float] = {}
    for t in out:
        if t.in_step_us <= 0 or t.index < 0:
            continue
        o = next((x for x in outputs if x.compile_id == t.compile_id and x.part == t.part), None)
        if o is None or t.index >= len(o.kernels):
            continue
        k = o.kernels[t.index]
        for key in k.user_lines:
            by_line[key] = by_line.get(key, 0.0) + t.in_step_us / len(k.user_lines)
        for key in k.modules:
            by_module[key] = by_module.get(key, 0.0) + t.in_step_us / len(k.modules)

    def shares(d: dict[str, float]) -> tuple[TimeShare, ...]:
        return tuple(TimeShare(key, round(us, 3), round(100 * us / in_graph, 1) if in_graph else 0.0)
                     for key, us in sorted(d.items(), key=lambda kv: -kv[1]))

    step = StepProfile(
        steps=len(matched.steps), method=IN_STEP_METHOD.format(steps=len(matched.steps), warm=IN_STEP_WARMUP),
        wall_us=round(wall, 1), gpu_busy_us=round(busy, 1), gpu_busy_pct=round(busy_pct, 1), launches=launches,
        cpu_between_launches_us=round(between, 2), in_graph_us=round(in_graph, 1),
        outside_us=round(med([x.outside_us for x in stats]), 1),
        outside_kernels=int(med([x.outside_kernels for x in stats])), verdict=v, evidence=evidence,
        suggestion=suggestion, gaps=tuple(gaps), by_line=shares(by_line), by_module=shares(by_module))
    return out, step


def attach(rep: Report, measured: Optional[Measured]) -> Report:
    """The report with its kernel benchmark (unchanged when nothing was measured)."""
    return rep if measured is None else rep.replace(bench=summarize(rep, measured))


# ----------------------------------------------------------------------------- device peaks (table)


@dataclass(frozen=True)
class Datasheet:
    """NVIDIA's published peaks for one board: memory bandwidth and dense (no sparsity) compute."""

    label: str
    bandwidth: float  # GB/s
    compute: dict[str, float]  # dtype -> TFLOP/s


#: NVIDIA H100 / H200 datasheets. Tensor-core figures are printed "with sparsity"; dense is half.
#: f32 is the CUDA-core (non-tensor) rate; tf32 the tensor-core rate for float32 inputs.
_GH100_SXM = {"f64": 34.0, "f32": 67.0, "tf32": 494.5, "bf16": 989.5, "f16": 989.5}
_GH100_NVL = {"f64": 30.0, "f32": 60.0, "tf32": 417.5, "bf16": 835.5, "f16": 835.5}
DATASHEETS: tuple[tuple[Callable[[str], bool], Datasheet], ...] = (
    (lambda n: "H200" in n and "NVL" in n, Datasheet("H200 NVL", 4800.0, _GH100_NVL)),
    (lambda n: "H200" in n, Datasheet("H200 SXM", 4800.0, _GH100_SXM)),
    (lambda n: "H100" in n and "NVL" in n, Datasheet("H100 NVL", 3900.0, _GH100_NVL)),
    (lambda n: "H100" in n and "PCIE" in n.upper(),
     Datasheet("H100 PCIe", 2000.0, {"f64": 26.0, "f32": 51.0, "tf32": 378.0, "bf16": 756.5, "f16": 756.5})),
    (lambda n: "H100" in n, Datasheet("H100 SXM", 3350.0, _GH100_SXM)),
)


def datasheet(device_name: str) -> Optional[Datasheet]:
    for matches, sheet in DATASHEETS:
        if matches(device_name):
            return sheet
    return None


def theoretical_bandwidth(memory_clock_khz: int, bus_width_bits: int) -> float:
    """GB/s from the memory clock (kHz, as CUDA reports it) and bus width: clock × width/8 × 2 (DDR)."""
    return memory_clock_khz * 1e3 * (bus_width_bits / 8) * 2 / 1e9


# ----------------------------------------------------------------------------- measuring (torch)


def check(options: Options, *, script: bool = False, device: str = "") -> None:
    """Refuse a --bench request that cannot run, before anything is compiled."""
    import torch

    if not torch.cuda.is_available():
        raise DeviceError("--bench times kernels on a CUDA GPU, and this machine has none "
                          "(torch.cuda.is_available() is False)",
                          "run it on a machine with a CUDA GPU, or leave out --bench")
    if script:
        raise UsageError("--bench needs a model file (`model` and `example_inputs`), not a script",
                         "define `model` and `example_inputs` in the file")
    if options.backend != "inductor":
        raise UsageError(f"--bench times the kernels Inductor generates, not --backend {options.backend}",
                         "use --backend inductor")
    where = device or options.device
    if where and not where.startswith("cuda"):
        raise UsageError(f"--bench times CUDA kernels, but the model runs on '{where}'", "pass --device cuda")


def _dtype_name(dtype: Any) -> str:
    from tcinspect.recording.inductor import short_dtype

    return short_dtype(dtype)


@dataclass
class Flush:
    """What runs before each timed launch: a cold L2 cache, then the GPU held busy.

    ``buffer`` (twice the L2 cache or more) is zeroed, which evicts the launch's data from L2;
    then the GPU spins for longer than the launch takes to enqueue from Python, so the launch is
    queued before the start event is reached and the events time the GPU, not the launch call.
    """

    buffer: Any
    clock_khz: int  # the GPU clock, to turn microseconds of holding into cycles

    def __call__(self, hold_us: float) -> None:
        from tcinspect.recording import _compat

        self.buffer.zero_()
        _compat.gpu_sleep(hold_us * self.clock_khz / 1e3)


def time_launch(fn: Callable[[], Any], runs: int, flush: Optional[Flush] = None, warmup: int = WARMUP) -> list[float]:
    """GPU milliseconds of ``fn`` per run, between CUDA events on the current stream.

    With ``flush``, each run starts with a cold L2 cache and the GPU held busy for twice the
    longest warm-up launch's Python time (at least 20 µs), so only GPU time is measured. A run
    whose launch took longer to enqueue than the hold (a GIL switch, a page fault) may have let
    the GPU wait for it inside the events: such runs are dropped, and if they are more than half,
    all runs are timed again with a longer hold.
    """
    import torch

    host = []
    for _ in range(warmup):
        start = time.perf_counter()
        fn()
        host.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    hold_us = min(max(20.0, 2e6 * max(host[1:] or host or [0.0])), 5000.0)
    kept: list[float] = []
    for _ in range(3):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        late = []
        for i in range(runs):
            if flush is not None:
                flush(hold_us)
            start = time.perf_counter()
            starts[i].record()
            fn()
            ends[i].record()
            late.append((time.perf_counter() - start) * 1e6 > hold_us)
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        if flush is None:
            return times
        kept = [t for t, was_late in zip(times, late) if not was_late]
        if 2 * len(kept) >= runs:
            return kept
        hold_us = min(4 * hold_us, 20000.0)
    return kept or times


def _copy_arguments(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The arguments with every tensor copied: views keep their offset and strides into a copied
    storage, and tensors sharing a storage still share the copy."""
    import torch

    storages: dict[tuple, Any] = {}

    def copy(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            if type(v) not in (torch.Tensor, torch.nn.Parameter):
                raise TypeError(f"a {type(v).__name__} argument (tensor subclasses are not replayed)")
            st = v.untyped_storage()
            key = (st.data_ptr(), st.nbytes(), str(v.device)) if st.nbytes() else (id(v),)
            if key not in storages:
                storages[key] = st.clone()
            out = torch.empty(0, dtype=v.dtype, device=v.device)
            out.set_(storages[key], v.storage_offset(), v.shape, v.stride())
            return out
        if isinstance(v, list):
            return [copy(x) for x in v]
        if isinstance(v, tuple):
            return tuple(copy(x) for x in v)
        return v

    return tuple(copy(a) for a in args), {k: copy(v) for k, v in kwargs.items()}


def _describe(launch: Any, call_args: tuple, call_kwargs: dict[str, Any],
              result: Any) -> tuple[list[Arg], dict[str, Any]]:
    """A call's tensor arguments (and the tensors it returned, as written) and its scalar arguments.

    ``call_args``/``call_kwargs`` are what ``result`` was computed from (the copies of the launch's).
    """
    import torch

    args: list[Arg] = []
    scalars: dict[str, Any] = {}
    storages: set[int] = set()

    def tensor(name: str, role: str, t: Any) -> None:
        storages.add(t.untyped_storage().data_ptr())
        args.append(Arg(name, role, tuple(t.shape), tuple(t.stride()), t.element_size(), _dtype_name(t.dtype)))

    def add(name: str, value: Any) -> None:
        role = launch.roles.get(name, "")
        if isinstance(value, torch.Tensor):
            tensor(name, role, value)
        elif isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    tensor(f"{name}[{i}]", role, v)
        elif value is None or isinstance(value, (bool, int, float, str)):
            scalars[name] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float)) for v in value):
            scalars[name] = list(value)

    for i, value in enumerate(call_args):
        add(launch.params[i] if i < len(launch.params) else str(i), value)
    for key, value in call_kwargs.items():
        add(key, value)
    returned = result if isinstance(result, (list, tuple)) else [result]
    for i, t in enumerate(returned):
        if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in storages:
            tensor(f"return[{i}]", "write", t)
    return args, scalars


class _Timer:
    """The launch hook: copy the arguments, time replays of the launch on the copies, record it."""

    def __init__(self, runs: int, flush: Flush) -> None:
        self.runs = runs
        self.flush = flush
        self.launches: list[Launch] = []

    def __call__(self, launch: Any) -> None:
        import torch

        rec = Launch(launch.kind, launch.name, launch.wrapper, launch.frame_id)
        self.launches.append(rec)
        if torch.cuda.is_current_stream_capturing():
            rec.note = "not timed: launched while a CUDA graph was being captured"
            return
        try:
            with torch.no_grad():
                args, kwargs = _copy_arguments(launch.args, launch.kwargs)
                result: list[Any] = [None]

                def once() -> None:
                    result[0] = launch.replay(args, kwargs)

                rec.times_ms = time_launch(once, self.runs, self.flush)
                rec.args, rec.scalars = _describe(launch, args, kwargs, result[0])
        except Exception as exc:  # noqa: BLE001 - one kernel we cannot replay leaves the others timed
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            rec.note = f"not timed: replaying it raised {type(exc).__name__}{': ' + first[:200] if first else ''}"
            rec.times_ms = []


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def _copy_bandwidth(device: Any, runs: int, overhead_us: float = 0.0) -> tuple[float, str]:
    """GB/s of a large device-to-device copy (bytes read + bytes written), the practical memory roof.

    The best run of two copies: cudaMemcpy (``copy_`` between contiguous tensors) and an
    elementwise copy kernel (``torch.mul(src, 1, out=dst)``), whichever the device does faster.
    """
    import torch

    props = torch.cuda.get_device_properties(device)
    free, _ = torch.cuda.mem_get_info(device)
    nbytes = min(max(1 << 30, 16 * props.L2_cache_size), free // 4) // 16 * 16
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    best = {"cudaMemcpy": min(time_launch(lambda: dst.copy_(src), runs)),
            "an elementwise copy kernel": min(time_launch(lambda: torch.mul(src, 1, out=dst), runs))}
    del src, dst
    how, ms = min(best.items(), key=lambda x: x[1])  # a roof is the best the device did
    us = _less_overhead(ms, overhead_us)
    return (round(2 * nbytes / (us / 1e6) / 1e9, 1),
            f"measured: {nbytes >> 20} MiB device-to-device copy by {how} (read + write), best of {runs}")


def _matmul_peak(device: Any, dtype: str, runs: int, overhead_us: float = 0.0) -> Optional[float]:
    """TFLOP/s of a large square matmul in ``dtype`` (tf32: float32 with TF32 allowed)."""
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "f32": torch.float32,
                   "f64": torch.float64}.get(dtype)
    if torch_dtype is None:
        return None
    n = 8192 if dtype in ("bf16", "f16", "tf32") else 4096
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        a = torch.randn(n, n, dtype=torch_dtype, device=device)
        b = torch.randn(n, n, dtype=torch_dtype, device=device)
        times = time_launch(lambda: torch.mm(a, b), runs)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return round(2 * n**3 / (_less_overhead(min(times), overhead_us) / 1e6) / 1e12, 1)


def device_peaks(device: Any, dtypes: Iterable[str], runs: int = 20,
                 overhead_us: float = 0.0) -> tuple[str, list[Peak]]:
    """The device's name and the peaks its kernels are compared against, each with its source."""
    import torch

    props = torch.cuda.get_device_properties(device)
    sheet = datasheet(props.name)
    peaks: list[Peak] = []
    clock, width = getattr(props, "memory_clock_rate", 0) or 0, getattr(props, "memory_bus_width", 0) or 0
    if clock and width:
        peaks.append(Peak("memory_bandwidth", round(theoretical_bandwidth(clock, width), 1), "GB/s",
                          f"device properties: {clock / 1e3:.0f} MHz memory clock × {width}-bit bus × 2 "
                          "(double data rate)"))
    elif sheet is not None:
        peaks.append(Peak("memory_bandwidth", sheet.bandwidth, "GB/s",
                          f"NVIDIA {sheet.label} datasheet (the device properties give no memory clock)"))
    value, how = _copy_bandwidth(device, runs, overhead_us)
    peaks.append(Peak("copy_bandwidth", value, "GB/s", how))
    for dtype in sorted(set(dtypes)):
        if sheet is not None and dtype in sheet.compute:
            peaks.append(Peak("compute", sheet.compute[dtype], "TFLOP/s",
                              f"NVIDIA {sheet.label} datasheet, dense", dtype=dtype))
            continue
        measured = _matmul_peak(device, dtype, runs, overhead_us)
        if measured is not None:
            peaks.append(Peak("compute", measured, "TFLOP/s", f"measured: a {dtype} matmul of 8192² (4096² in f32/f64), best of {runs}",
                              dtype=dtype))
    return props.name, peaks


def _timing_overhead(device: Any, runs: int, flush: Flush) -> float:
    """What timing one launch alone between CUDA events adds over its cost in a stream of launches, in µs.

    A 1-element kernel is timed alone and as a burst of BURST back-to-back launches; the burst adds
    BURST - 1 launches at their cost in a stream, so alone - (burst - alone) / (BURST - 1) is what
    timing a launch alone adds (the end event's completion, the GPU starting an isolated kernel):
    about 2 µs on an H100, where a 1-element kernel costs about 2 µs in a stream (1 µs of it the
    kernel's duration in a profiler, the rest the gap before the next kernel starts).
    """
    import torch

    one = torch.empty(1, device=device)

    def burst() -> None:
        for _ in range(BURST):
            one.zero_()

    alone = statistics.median(time_launch(one.zero_, runs, flush))
    many = statistics.median(time_launch(burst, runs, flush))
    return max(alone - (many - alone) / (BURST - 1), 0.0) * 1e3


def _requires_grad(out: Any) -> bool:
    import torch

    if isinstance(out, torch.Tensor):
        return out.requires_grad
    if isinstance(out, (list, tuple)):
        return any(_requires_grad(v) for v in out)
    if isinstance(out, dict):
        return any(_requires_grad(v) for v in out.values())
    return False


def end_to_end(model: Callable[..., Any], compiled: Callable[..., Any], inputs: tuple,
               step: Callable[[Callable[..., Any], tuple], Any], runs: int, backward: bool) -> list[EndToEnd]:
    """Eager against compiled, wall time per synchronised call: forward, and forward+backward."""
    import torch

    def per_call(fn: Callable[[], Any]) -> float:
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    def pair(what: str, eager: Callable[[], Any], comp: Callable[[], Any]) -> EndToEnd:
        e, c = per_call(eager), per_call(comp)
        return EndToEnd(what, round(e, 4), round(c, 4), round(e / c, 2) if c else 0.0, runs)

    out = [pair("forward", lambda: model(*inputs), lambda: compiled(*inputs))]
    if backward and _requires_grad(compiled(*inputs)):
        out.append(pair("forward+backward", lambda: step(model, inputs), lambda: step(compiled, inputs)))
    return out


def measure(model: Callable[..., Any], compiled: Callable[..., Any], inputs: tuple,
            step: Callable[[Callable[..., Any], tuple], Any], options: Options) -> Measured:
    """Time every kernel of one more compiled call (``step``), measure the peaks and the end-to-end times.

    Runs while the compiled frames are alive (inside the capture), after the recorded calls.
    """
    import torch

    from tcinspect.recording import _compat

    runs = options.bench
    device = torch.device(options.device or "cuda")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(device)
    flush_bytes = max(2 * props.L2_cache_size, 64 << 20)
    flush = Flush(torch.empty(flush_bytes // 4, dtype=torch.int32, device=device), props.clock_rate)
    overhead_us = _timing_overhead(device, runs, flush)
    timer = _Timer(runs, flush)
    torch.cuda.synchronize(device)
    with _compat.intercept_launches(timer):
        step(compiled, inputs)
    torch.cuda.synchronize(device)
    del flush
    tf32 = (bool(torch.backends.cuda.matmul.allow_tf32), bool(torch.backends.cudnn.allow_tf32))
    name, peaks = device_peaks(device, compute_dtypes(timer.launches, tf32), overhead_us=overhead_us)
    profile = _profile_steps(compiled, inputs, step, IN_STEP_STEPS)
    e2e = end_to_end(model, compiled, inputs, step, runs, options.backward)
    notes: list[str] = []
    method = (f"each launch replayed on copies of its arguments: {WARMUP} warm-up runs, then the median of {runs} "
              f"runs timed with CUDA events, each after an L2 flush ({flush_bytes >> 20} MiB written) and a GPU "
              "hold that lets the launch be queued first; the timing overhead is subtracted")
    wrappers = {path: _read(path) for path in dict.fromkeys(x.wrapper for x in timer.launches)}
    return Measured(device_name=name, runs=runs, method=method, launches=timer.launches, wrappers=wrappers,
                    peaks=peaks, end_to_end=e2e, tf32=tf32, launch_overhead_us=round(overhead_us, 3),
                    profile=profile, profile_steps=IN_STEP_STEPS if profile is not None else 0, notes=notes)


def try_mode(m: Measured, model: Callable[..., Any], inputs: tuple,
             step: Callable[[Callable[..., Any], tuple], Any], options: Options) -> None:
    """``--try-mode``: the same model compiled with another mode, timed as the default's end to end.

    Runs after the recording (its compile is no part of the report); CUDA graphs (reduce-overhead)
    record on their first calls, so the warm-up is longer than the default's.
    """
    import torch

    try:
        other = torch.compile(model, mode=options.try_mode)
        for _ in range(TRY_MODE_WARMUP):
            step(other, inputs)
        torch.cuda.synchronize()
        m.end_to_end += [replace(e, what=f"{e.what}, mode={options.try_mode}")
                         for e in end_to_end(model, other, inputs, step, m.runs, options.backward)]
    except Exception as exc:  # noqa: BLE001 - the mode failing is a finding, not a crash
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        m.notes.append(f"--try-mode {options.try_mode}: compiling or running it raised {type(exc).__name__}: {first}")


TRY_MODE_WARMUP = 5
IN_STEP_STEPS = 10
IN_STEP_WARMUP = 3


def _profile_steps(compiled: Callable[..., Any], inputs: tuple, step: Callable[[Callable[..., Any], tuple], Any],
                   steps: int) -> Optional[dict[str, Any]]:
    """Run the real compiled step ``steps`` times under torch.profiler; its Chrome trace (None if it fails)."""
    import json
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from tcinspect.recording.instep import STEP_MARK

    for _ in range(IN_STEP_WARMUP):
        step(compiled, inputs)
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(steps):
                with record_function(f"{STEP_MARK}{i}"):
                    step(compiled, inputs)
                torch.cuda.synchronize()
        with tempfile.TemporaryDirectory(prefix="tcinspect-profile-") as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
    except Exception:  # noqa: BLE001 - no profile (CUPTI unavailable): the replay times stand alone
        return None
