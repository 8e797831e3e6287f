"""`codegen --bench`'s measurements -> the report's ``bench`` section (pure; no torch): each measured launch
matched to the report's kernels, in launch order, placed on the roofline, and the in-step view from the
profiled steps.

What was measured is tcinspect.parse.measured, the arithmetic tcinspect.parse.kernelmath; the measuring
itself is tcinspect.capturing.gpu_timing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Optional

from tcinspect.parse.kernelmath import flops_of, less_overhead, resolve_roles, roofline, traffic
from tcinspect.parse.measured import IN_STEP_WARMUP, Launch, Measured
from tcinspect.report import (
    KernelBench,
    KernelTiming,
    OutputCode,
    Report,
    StepGap,
    StepProfile,
    TimeShare,
)


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
    median_us = less_overhead(statistics.median(launch.times_ms), m.launch_overhead_us)
    place = roofline(median_us, read + written, flops, bandwidth, copy, compute.get(dtype, 0.0))
    return KernelTiming(**base, median_us=round(median_us, 3),
                        min_us=round(less_overhead(min(launch.times_ms), m.launch_overhead_us), 3),
                        runs=len(launch.times_ms), bytes_read=read, bytes_written=written, flops=flops, dtype=dtype,
                        note=launch.note, **place)


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
