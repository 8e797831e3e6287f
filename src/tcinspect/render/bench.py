"""Report -> the `codegen --bench` view: every kernel's time on the roofline, the peaks, end to end; and its
YAML/JSON document.

Pure: never prints, never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, JustifyMethod, RenderableType
from rich.text import Text

from tcinspect.analysis.bench import bench_rows
from tcinspect.render.grid import Table
from tcinspect.report import KernelTiming, Peak, Report, StepProfile

BAR_WIDTH = 8
_PART = {"forward": "fwd", "backward": "bwd", "inference": "inf"}
_PEAK_LABEL = {"memory_bandwidth": "memory bandwidth", "copy_bandwidth": "copy bandwidth"}
_SORTED = {"step": "in-step time", "time": "replay time", "peak": "% of roofline", "launch": "launch order"}
_BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow"}


def size(n: int) -> str:
    """Bytes in binary units: 512 B, 16.0 KiB, 256.0 MiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def short_size(n: int) -> str:
    """Bytes in 3 significant binary digits: 512B, 16K, 1.5M, 256M."""
    value = float(n)
    for unit in ("B", "K", "M", "G"):
        if value < 1000 or unit == "G":
            return f"{value:.0f}{unit}" if value >= 10 or unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{n}B"


def bar(percent: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``percent`` (0-100, clipped) in eighths of a cell."""
    eighths = round(max(0.0, min(percent, 100.0)) / 100 * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + ("" if part == 0 else "▏▎▍▌▋▊▉"[part - 1])
    return text.ljust(width, "·")


def _name(name: str, width: int = 30) -> str:
    # keep the end: Inductor's names differ in their suffix (…_view_2 vs …_view_3)
    return name if len(name) <= width else name[: width - 16] + "…" + name[-15:]


def peak_lines(peaks: Sequence[Peak], overhead_us: float = 0.0) -> Table:
    t = Table(show_header=False, box=None, padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(justify="right", no_wrap=True)
    t.add_column(style="dim")
    for p in peaks:
        label = f"compute ({p.dtype})" if p.kind == "compute" else _PEAK_LABEL.get(p.kind, p.kind)
        t.add_row(label, f"{p.value:,.1f} {p.unit}", p.source)
    if overhead_us:
        t.add_row("timing overhead", f"{overhead_us:.1f} µs", "what timing one launch with CUDA events adds "
                  "(a 1-element kernel alone vs back to back), subtracted from every time below")
    return t


def kernel_table(rows: Sequence[tuple[int, KernelTiming]], title: str, in_step: bool = False) -> Table:
    flops = any(k.flops for _, k in rows)
    t = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False,
              collapse_padding=True)
    step_col: tuple[tuple[str, JustifyMethod], ...] = (("step µs", "right"),) if in_step else ()
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        (("#", "right"), ("kernel", "left"), ("graph", "left")) + step_col
        + (("alone µs" if in_step else "µs", "right"), ("share", "right"), ("bytes r/w", "right"), ("GB/s", "right"))
        + ((("TFLOP/s", "right"),) if flops else ()) + (("% of roofline", "left"), ("bound", "left")))
    for name, justify in columns:
        t.add_column(name, justify=justify, no_wrap=True, style={"#": "dim", "kernel": "cyan", "graph": "dim"}.get(name))
    for n, k in rows:
        graph = f"{k.compile_id} {_PART.get(k.part, k.part)}".strip()
        step = ([f"{k.in_step_us:,.1f}" if k.in_step_us > 0 else "–"] if in_step else [])
        width = 24 if in_step else 30
        if k.median_us <= 0:
            cells = [str(n), _name(k.name, width), graph, *step, "–", "", "", ""] + ([""] if flops else [])
            t.add_row(*cells, Text("not timed", style="dim"), "")
            continue
        roof = Text(bar(k.pct_of_roofline), style=_BOUND_STYLE.get(k.bound, ""))
        roof.append(f" {k.pct_of_roofline:5.1f}%")
        cells = [str(n), _name(k.name, width), graph, *step, f"{k.median_us:,.1f}", f"{k.share:.1f}%",
                 f"{short_size(k.bytes_read)}/{short_size(k.bytes_written)}", f"{k.gb_per_s:,.0f}"]
        if flops:
            cells.append(f"{k.tflop_per_s:.2f}" if k.flops else "")
        t.add_row(*cells, roof, Text(k.bound, style=_BOUND_STYLE.get(k.bound, "")))
    return t


def view(rep: Report, rows: Sequence[tuple[int, KernelTiming]], sort: str = "time") -> RenderableType:
    """The bench table for ``rows`` (launch number, timing) as sorted by the caller."""
    b = rep.bench
    if b is None:
        return Text("this report has no kernel benchmark", style="dim")
    timed = [k for k in b.kernels if k.median_us > 0]
    parts: list[RenderableType] = [
        Text(f"Kernel benchmark · {b.device_name} · torch {rep.torch_version} · {len(timed)} of {len(b.kernels)} "
             f"launches timed", style="bold"),
        Text(f"  {b.method}", style="dim"),
        peak_lines(b.peaks, b.launch_overhead_us),
        Text(""),
        kernel_table(rows, f"kernels by {_SORTED.get(sort, sort)} · step = in the real step (profiler), alone = replayed "
                           "alone after an L2 flush · % of roofline = achieved ÷ min(compute peak, arithmetic "
                           "intensity × memory bandwidth)",
                     in_step=b.step is not None),
    ]
    if b.step is not None:
        parts.extend(step_view(b.step))
        advice = cudagraph_advice(rep)
        if advice:
            parts.append(Text(f"  CUDA graphs: {advice}", style="bold yellow"))
    line = Text("  kernel time ", style="bold")
    line.append(f"{b.total_us:,.1f} µs summed over {len(timed)} launches")
    bounds: dict[str, float] = {}
    for k in timed:
        bounds[k.bound] = bounds.get(k.bound, 0.0) + k.share
    if bounds:
        line.append("  (" + ", ".join(f"{bound or '?'}-bound {share:.0f}%" for bound, share in
                                      sorted(bounds.items(), key=lambda x: -x[1])) + " of it)", style="dim")
    parts.append(line)
    for e in b.end_to_end:
        row = Text(f"  end to end, {e.what}: ", style="bold")
        row.append(f"eager {e.eager_ms:.3f} ms → compiled {e.compiled_ms:.3f} ms per call, ")
        row.append(f"{e.speedup:.2f}× speedup", style="bold green" if e.speedup >= 1 else "bold red")
        row.append(f"  (median of {e.runs} synchronised calls)", style="dim")
        parts.append(row)
    untimed = [(n, k) for n, k in rows if k.median_us <= 0]
    for n, k in untimed[:8]:
        parts.append(Text(f"  #{n} {k.name}: {k.note}", style="dim"))
    if len(untimed) > 8:
        parts.append(Text(f"  … and {len(untimed) - 8} more not timed (--format yaml lists them)", style="dim"))
    for note in b.notes:
        parts.append(Text(f"  note: {note}", style="dim"))
    return Group(*parts)


def cudagraph_advice(rep: Report) -> str:
    """What the step's verdict must add when the run had CUDA graphs on: the graphs torch skipped and why."""
    cg = rep.cudagraphs
    if cg is None or rep.bench is None or rep.bench.step is None:
        return ""
    skipped = [g for g in cg.graphs if g.status == "skipped"]
    if skipped:
        return (f"on, but torch ran {len(skipped)} graph{'s' if len(skipped) != 1 else ''} without them: "
                + "; ".join(f"{g.compile_id} {g.part}: {g.reason}" + (f" ({', '.join(g.user_lines)})" if g.user_lines
                                                                      else "") for g in skipped)
                + ". Remove what torch names (an in-place update of an input, a CPU tensor in the graph) and its "
                  "launches go into the CUDA graph")
    if rep.bench.step.verdict == "launch-bound" and cg.recordings:
        return (f"on: {cg.recordings} recording{'s' if cg.recordings != 1 else ''}, every graph recorded; the launches "
                "left are outside the graphs (eager code between them)")
    return ""


def step_view(st: StepProfile) -> list[RenderableType]:
    """What the real step is bound by, with the evidence, the biggest GPU gaps and where time goes."""
    head = Text("  step ", style="bold")
    head.append(f"{st.wall_us / 1000:,.3f} ms wall, GPU busy {st.gpu_busy_us / 1000:,.3f} ms ({st.gpu_busy_pct:.0f}%), "
                f"{st.launches} kernels per step, median {st.cpu_between_launches_us:.1f} µs CPU between launches"
                f"  (median of {st.steps} profiled steps)")
    verdict = Text("  verdict ", style="bold")
    verdict.append(st.verdict, style="bold yellow" if st.verdict != "GPU-bound" else "bold green")
    verdict.append(f": {st.evidence}. ")
    verdict.append(f"Try: {st.suggestion}", style="italic")
    out: list[RenderableType] = [Text(""), head, verdict]
    if st.outside_kernels:
        out.append(Text(f"  outside the compiled graphs: {st.outside_kernels} kernels, {st.outside_us:,.1f} µs per step",
                        style="dim"))
    for g in st.gaps[:5]:
        out.append(Text(f"  gap {g.idle_us:,.1f} µs after {g.after or '(step start)'} before {g.before}"
                        + (f"  [{g.boundary}]" if g.boundary else ""), style="dim"))
    for label, items in (("by line", st.by_line), ("by module", st.by_module)):
        if items:
            out.append(Text(f"  in-step GPU time {label}: " + ", ".join(
                f"{x.key.rsplit('/', 1)[-1]} {x.pct:.0f}%" for x in items[:6]), style="dim"))
    return out


#: The units of the kernel benchmark's numbers, written beside them in YAML/JSON.
BENCH_UNITS = {
    "median_us": "microseconds (GPU time, median of `runs`)", "min_us": "microseconds",
    "bytes_read": "bytes", "bytes_written": "bytes", "flops": "floating-point operations",
    "gb_per_s": "GB/s (1e9 bytes per second)", "tflop_per_s": "TFLOP/s (1e12 FLOP per second)",
    "pct_of_bandwidth": "percent of the theoretical memory bandwidth",
    "pct_of_copy": "percent of the measured copy bandwidth", "pct_of_compute": "percent of the dtype's compute peak",
    "pct_of_roofline": "percent of the roof at the kernel's arithmetic intensity",
    "share": "percent of the summed kernel time", "eager_ms": "milliseconds per call",
    "compiled_ms": "milliseconds per call", "total_us": "microseconds",
    "launch_overhead_us": "microseconds (subtracted from every median_us and min_us)",
    "in_step_us": "microseconds (GPU time in the real step under torch.profiler, median over the profiled steps)",
    "wall_us": "microseconds per step", "gpu_busy_us": "microseconds per step", "gpu_busy_pct": "percent of wall_us",
    "cpu_between_launches_us": "microseconds (median CPU time between kernel launch calls)",
    "idle_us": "microseconds", "in_graph_us": "microseconds", "outside_us": "microseconds",
}


def bench_document(rep: Report, sort: str = "time") -> dict[str, Any]:
    """`codegen --bench`'s YAML/JSON: the device, its peaks, every kernel's numbers with units, end to end."""
    from tcinspect.serialize import plain as _plain

    b = rep.bench
    assert b is not None
    return {
        "torch_version": rep.torch_version, "device": rep.device, "device_name": b.device_name,
        "target": rep.target.path or rep.target.model_name, "runs": b.runs, "method": b.method, "units": BENCH_UNITS,
        "peaks": _plain(b.peaks), "end_to_end": _plain(b.end_to_end), "total_us": b.total_us,
        "launch_overhead_us": b.launch_overhead_us, "sort": sort,
        **({"step": _plain(b.step)} if b.step is not None else {}),
        "kernels": [{"launch": n, **_plain(k)} for n, k in bench_rows(rep, sort)], "notes": list(b.notes),
    }
