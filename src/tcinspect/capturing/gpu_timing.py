"""`codegen --bench`: time every kernel one compiled call launches on a CUDA GPU, and place it on the roofline.

One more call of the compiled model (forward, and backward when the capture ran it) runs with
every kernel launch an Inductor wrapper makes intercepted (``_compat.launches.intercept_launches``). Each
launch's tensor arguments are copied (views keep their storage layout), the kernel is replayed on
the copies — a few warm-up launches, then ``runs`` launches, each between two CUDA events, after
an L2 flush and a GPU hold long enough for the launch to be queued first — and the real launch
then proceeds untouched. What timing a launch alone adds over the same launch in a stream of
launches (about 2 µs) is measured with a 1-element kernel and subtracted, so a tiny kernel's time
is its cost in a stream: a profiler's kernel duration plus the ~1 µs gap before the next kernel
starts. Replaying the launch the
model really made times every kind of kernel the same way: generated and user Triton kernels, and
the extern ``mm``/``addmm``/``bmm``/``convolution`` and ``torch.ops.aten`` calls.

What it measures is tcinspect.parse.measured; the arithmetic (bytes, FLOPs, the roofline) is
tcinspect.parse.kernelmath, matching launches to the report's kernels tcinspect.parse.roofline; this
module measures, and imports torch inside its functions.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing.datasheets import datasheet, theoretical_bandwidth
from tcinspect.capturing.modelfile import Call
from tcinspect.errors import DeviceError, UsageError
from tcinspect.parse.kernelmath import compute_dtypes, less_overhead
from tcinspect.parse.measured import BURST, IN_STEP_STEPS, IN_STEP_WARMUP, WARMUP, Arg, Launch, Measured
from tcinspect.report import BenchRequest, CompileOptions, EndToEnd, Peak

# ----------------------------------------------------------------------------- measuring (torch)


def check(options: CompileOptions, *, script: bool = False, device: str = "") -> None:
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
    from tcinspect.parse.inductor import short_dtype

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
        from tcinspect.capturing import _compat

        self.buffer.zero_()
        _compat.launches.gpu_sleep(hold_us * self.clock_khz / 1e3)


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
    best = _copy_times(device, nbytes, runs)  # its two buffers are freed when it returns
    how, ms = min(best.items(), key=lambda x: x[1])  # a roof is the best the device did
    us = less_overhead(ms, overhead_us)
    return (round(2 * nbytes / (us / 1e6) / 1e9, 1),
            f"measured: {nbytes >> 20} MiB device-to-device copy by {how} (read + write), best of {runs}")


def _copy_times(device: Any, nbytes: int, runs: int) -> dict[str, float]:
    """The best milliseconds of each way to copy ``nbytes`` from one buffer on ``device`` to another."""
    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return {"cudaMemcpy": min(time_launch(lambda: dst.copy_(src), runs)),
            "an elementwise copy kernel": min(time_launch(lambda: torch.mul(src, 1, out=dst), runs))}


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
    return round(2 * n**3 / (less_overhead(min(times), overhead_us) / 1e6) / 1e12, 1)


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


def end_to_end(model: Callable[..., Any], compiled: Callable[..., Any], inputs: Call,
               step: Callable[[Callable[..., Any], Call], Any], runs: int, backward: bool) -> list[EndToEnd]:
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

    out = [pair("forward", lambda: inputs(model), lambda: inputs(compiled))]
    if backward and _requires_grad(inputs(compiled)):
        out.append(pair("forward+backward", lambda: step(model, inputs), lambda: step(compiled, inputs)))
    return out


def measure(model: Callable[..., Any], compiled: Callable[..., Any], inputs: Call,
            step: Callable[[Callable[..., Any], Call], Any], options: CompileOptions,
            bench: BenchRequest) -> Measured:
    """Time every kernel of one more compiled call (``step``), measure the peaks and the end-to-end times.

    Runs while the compiled frames are alive (inside the capture), after the recorded calls.
    """
    import torch

    from tcinspect.capturing import _compat

    runs = bench.runs
    device = torch.device(options.device or "cuda")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    props = torch.cuda.get_device_properties(device)
    flush_bytes = max(2 * props.L2_cache_size, 64 << 20)
    flush = Flush(torch.empty(flush_bytes // 4, dtype=torch.int32, device=device), props.clock_rate)
    overhead_us = _timing_overhead(device, runs, flush)
    timer = _Timer(runs, flush)
    torch.cuda.synchronize(device)
    with _compat.launches.intercept_launches(timer):
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


def try_mode(m: Measured, model: Callable[..., Any], inputs: Call,
             step: Callable[[Callable[..., Any], Call], Any], options: CompileOptions, mode: str) -> None:
    """``--try-mode``: the same model compiled with another mode, timed as the default's end to end.

    Runs after the recording (its compile is no part of the report); CUDA graphs (reduce-overhead)
    record on their first calls, so the warm-up is longer than the default's.
    """
    import torch

    try:
        other = torch.compile(model, mode=mode)
        for _ in range(TRY_MODE_WARMUP):
            step(other, inputs)
        torch.cuda.synchronize()
        m.end_to_end += [replace(e, what=f"{e.what}, mode={mode}")
                         for e in end_to_end(model, other, inputs, step, m.runs, options.backward)]
    except Exception as exc:  # noqa: BLE001 - the mode failing is a finding, not a crash
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        m.notes.append(f"--try-mode {mode}: compiling or running it raised {type(exc).__name__}: {first}")


TRY_MODE_WARMUP = 5


def _profile_steps(compiled: Callable[..., Any], inputs: Call, step: Callable[[Callable[..., Any], Call], Any],
                   steps: int) -> Optional[dict[str, Any]]:
    """Run the real compiled step ``steps`` times under torch.profiler; its Chrome trace (None if it fails)."""
    import json
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from tcinspect.capturing import _compat  # torch's: this module is read without it (a report's GPU figures)
    from tcinspect.parse.instep import STEP_MARK

    for _ in range(IN_STEP_WARMUP):
        step(compiled, inputs)
    torch.cuda.synchronize()
    try:
        with (_compat.profiler.markers_dropped(),
              profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof):
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
