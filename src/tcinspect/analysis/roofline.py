"""The roofline arithmetic of `codegen --bench` (pure; no torch): what was measured, bytes and FLOPs of a
launch, each kernel on the roofline, the in-step view from profiled steps, and device datasheets.

Bytes read and written come from the argument tensors' sizes and dtypes (each tensor counted once,
an in/out tensor once each way); FLOPs from matmul, convolution and attention shapes. The peaks
compared against are sourced: the theoretical memory bandwidth from the device properties (else
NVIDIA's datasheet), a measured device-to-device copy as the practical roof, and the dense compute
peak for the dtype from the datasheet (else a measured large matmul). The measuring itself is
tcinspect.capturing.gpu_timing.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from tcinspect.report import (
    EndToEnd,
    KernelBench,
    KernelTiming,
    OutputCode,
    Peak,
    Report,
    StepGap,
    StepProfile,
    TimeShare,
)

#: Warm-up launches before the timed ones (the first launch of an extern call may set up a handle).
WARMUP = 3
#: A kernel whose time at the roofline would be under this is bound by the fixed cost of a launch
#: on the GPU (a microsecond or two) rather than by bandwidth or compute.
LATENCY_US = 2.0
#: Back-to-back launches of a 1-element kernel that measure the timing overhead (see _timing_overhead).
BURST = 9
#: Profiled steps of the in-step view, after warm-up steps (capture.gpu_timing runs them).
IN_STEP_STEPS = 10
IN_STEP_WARMUP = 3


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
    base: dict[str, Any] = dict(compile_id=o.compile_id if o else "", part=o.part if o else "", index=index, name=name,
                                kind=kind)
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


def _in_step(outputs: Sequence[OutputCode], rows: list[tuple[int, int, Optional[Launch]]], stray: list[Launch],
             timings: list[KernelTiming], m: Measured) -> tuple[list[KernelTiming], Optional[StepProfile]]:
    """Each timed launch's in-step time and the step view, from the profiled steps."""
    from tcinspect.parse import instep

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
            oc = outputs[oi]
            where[position[id(launch)]] = instep.Where(f"{oc.compile_id} {oc.part}", oc.kernels[index].name)
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
    gaps: list[StepGap] = []
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
