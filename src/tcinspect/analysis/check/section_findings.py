"""`tcinspect check`'s budgets on a report's optional sections: coverage, CUDA graphs, memory, regions and guard
latency, each against its limit and (where a baseline records it) against the baseline's entry. A section the
run does not have is said, not judged. Pure."""

from __future__ import annotations

from typing import Any, Optional

from tcinspect.analysis.check.limits import Limits
from tcinspect.analysis.check.outcome import Finding, pct
from tcinspect.errors import UsageError
from tcinspect.report import Report

#: PyTorch CI's tolerance for a drop in calls_captured (benchmarks/dynamo/check_graph_breaks.py): 5 percent
CALLS_CAPTURED_TOLERANCE_PCT = 5.0


def coverage_finding(model: str, rep: Report, minimum: float) -> Finding:
    """``--min-coverage``: the measured call's ATen ops that ran compiled; not measured is said, not judged."""
    from tcinspect.analysis.coverage import compiled_share

    runtime = rep.coverage.runtime if rep.coverage is not None else None
    share = compiled_share(runtime)
    if share is None or runtime is None:
        why = runtime.not_measured if runtime is not None and runtime.not_measured else \
            "no call was measured (a report saved before tcinspect measured coverage)"
        return Finding(model, "coverage", "ok", f"coverage not measured ({why}): min {pct(minimum)} not judged")
    worst = runtime.islands[0] if runtime.islands else None
    where = f"; most eager ops at {worst.file.rsplit('/', 1)[-1]}:{worst.line} `{worst.code}`" if worst else ""
    if share < minimum:
        return Finding(model, "coverage", "fail", f"coverage {pct(share)} of ATen ops ran compiled < min "
                       f"{pct(minimum)} ({runtime.eager_ops} of {runtime.ops} ran eagerly{where})",
                       worst.file if worst else rep.target.path, worst.line if worst else 0)
    return Finding(model, "coverage", "ok", f"coverage {pct(share)} of ATen ops ran compiled >= min {pct(minimum)}")


def cudagraph_coverage_finding(model: str, rep: Report, minimum: float) -> Finding:
    """``--min-cudagraph-coverage``: the compiled graphs' kernels inside CUDA graphs; a run without CUDA graphs (or
    without kernels) is said, not judged. A failure names the costliest eager island and its line."""
    from tcinspect.analysis.cudagraphs import islands, kernel_share

    share = kernel_share(rep.cudagraphs)
    if share is None or rep.cudagraphs is None:
        return Finding(model, "cudagraph_coverage", "ok", "CUDA-graph coverage: not in this run (CUDA graphs off, or "
                       f"no kernels): min {pct(minimum)} not judged")
    cg = rep.cudagraphs
    text = f"CUDA-graph coverage {pct(share)} of kernels ({cg.kernels_in_cudagraphs} of {cg.kernels})"
    if share >= minimum:
        return Finding(model, "cudagraph_coverage", "ok", f"{text} >= min {pct(minimum)}")
    worst = next(iter(islands(rep)), None)
    where = ""
    file, line = rep.target.path, 0
    if worst is not None:
        p = worst.partition
        where = f"; costliest eager island {worst.name}: {', '.join(p.reasons) or 'reason not logged'}"
        if p.user_lines:
            where += f" at {p.user_lines[0].rsplit('/', 1)[-1]}"
            file, _, at = p.user_lines[0].rpartition(":")
            line = int(at) if at.isdigit() else 0
    skipped = _cudagraph_why(rep)
    return Finding(model, "cudagraph_coverage", "fail", f"{text} < min {pct(minimum)}{where}{skipped}", file, line)


def cause(name: str, rep: Report) -> str:
    """What a failing section count stems from, in the finding's words."""
    if name == "fallbacks_to_eager":
        from tcinspect.analysis.coverage import eager_frames

        named = [f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line})"
                 + (f" given up at {f.user_frame.short()} `{f.user_frame.code}`" if f.user_frame else "")
                 for f in eager_frames(rep)]
        return f" (ran eagerly: {'; '.join(named)})" if named else ""
    return _cudagraph_why(rep)


def compare_coverage(model: str, rep: Report, base: dict[str, Any], tolerance_pct: float) -> list[Finding]:
    """calls_captured against the baseline's, as PyTorch CI gates it: a drop of more than ``tolerance_pct`` percent
    fails (nothing is judged where the baseline predates coverage or the report has none)."""
    before = base.get("calls_captured")
    if rep.coverage is None or isinstance(before, bool) or not isinstance(before, int):
        return []
    now = rep.coverage.calls_captured
    runtime, recorded = rep.coverage.runtime, base.get("eager_ops")
    was_eager = recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None
    if now < before * (1 - tolerance_pct / 100) and runtime is not None and not runtime.not_measured \
            and was_eager is not None and runtime.eager_ops <= was_eager \
            and rep.coverage.fallbacks_to_eager <= int(base.get("fallbacks_to_eager") or 0):
        # fewer ops captured, and no more run eagerly (the measured call's): the model has fewer ops, e.g. a fixed
        # break's own code removed; coverage did not fall
        return [Finding(model, "calls_captured", "ok", f"calls captured {now} < baseline {before}, and no more ATen ops "
                        f"ran eagerly ({runtime.eager_ops} <= {was_eager}): the model has fewer ops, none fell to eager")]
    if now < before * (1 - tolerance_pct / 100):
        return [Finding(model, "calls_captured", "fail", f"calls captured {now} < baseline {before} (a drop of "
                        f"{100 * (before - now) / before:.0f}%, more than {tolerance_pct:g}%){cause('fallbacks_to_eager', rep)}",
                        rep.target.path)]
    if now > before:
        return [Finding(model, "calls_captured", "improved", f"calls captured {now} > baseline {before}")]
    within = "" if now == before else f" (within {tolerance_pct:g}%)"
    return [Finding(model, "calls_captured", "ok", f"calls captured {now} {'=' if now == before else '<'} baseline "
                    f"{before}{within}")]


def _cudagraph_why(rep: Report) -> str:
    """The skips torch gave, for a failing CUDA graph budget's message."""
    cg = rep.cudagraphs
    skipped = [g for g in cg.graphs if g.status == "skipped"] if cg is not None else []
    return "".join(f"; {g.compile_id} {g.part} skipped: {g.reason}" for g in skipped)


def saved_bytes(rep: Report) -> int:
    """Bytes the report's forward graphs save for backward (0 when none has a backward)."""
    return rep.memory.saved_bytes if rep.memory is not None else 0


def memory_limits(model: str, rep: Report, limits: Limits) -> list[Finding]:
    """``--max-saved-bytes`` and ``--max-peak-ratio``; a ratio that was not measured is said, not judged."""
    from tcinspect.analysis.memory import peak_ratio

    out = []
    if limits.saved_bytes is not None:
        now = saved_bytes(rep)
        status = "fail" if now > limits.saved_bytes else "ok"
        out.append(Finding(model, "saved_bytes", status, f"saved for backward {now:,} B "
                           f"{'>' if status == 'fail' else '<='} max {limits.saved_bytes:,} B",
                           rep.target.path if status == "fail" else ""))
    if limits.peak_ratio is not None:
        ratio = peak_ratio(rep)
        if ratio is None:
            why = rep.memory.not_measured if rep.memory is not None and rep.memory.not_measured else \
                "not measured (no backward graph, or a report without a measurement)"
            out.append(Finding(model, "peak_ratio", "ok", f"peak ratio not checked: {why}"))
        else:
            status = "fail" if ratio > limits.peak_ratio else "ok"
            out.append(Finding(model, "peak_ratio", status, f"peak compiled/eager {ratio:.3f} "
                               f"{'>' if status == 'fail' else '<='} max {limits.peak_ratio:g}",
                               rep.target.path if status == "fail" else ""))
    return out


#: how far the measured peak ratio may rise above its baseline before ``check`` fails (absolute)
PEAK_RATIO_SLACK = 0.05


def compare_memory(model: str, rep: Report, base: dict[str, Any]) -> list[Finding]:
    """Saved bytes (exact) and the peak ratio (within PEAK_RATIO_SLACK) against a baseline that records them."""
    from tcinspect.analysis.memory import peak_ratio

    out = []
    before = base.get("saved_bytes")
    if isinstance(before, int) and not isinstance(before, bool):
        now = saved_bytes(rep)
        if now > before:
            out.append(Finding(model, "saved_bytes", "fail", f"saved for backward {now:,} B > baseline {before:,} B",
                               rep.target.path))
        elif now < before:
            out.append(Finding(model, "saved_bytes", "improved", f"saved for backward {now:,} B < baseline {before:,} B"))
        else:
            out.append(Finding(model, "saved_bytes", "ok", f"saved for backward {now:,} B = baseline"))
    old = base.get("peak_ratio")
    ratio = peak_ratio(rep)
    if isinstance(old, (int, float)) and not isinstance(old, bool) and ratio is not None:
        text = f"peak compiled/eager {ratio:.3f} vs baseline {old:.3f} (slack {PEAK_RATIO_SLACK})"
        status = "fail" if ratio > old + PEAK_RATIO_SLACK else ("improved" if ratio < old - PEAK_RATIO_SLACK else "ok")
        out.append(Finding(model, "peak_ratio", status, text, rep.target.path if status == "fail" else ""))
    return out


def measures_peaks(limits: Limits, baseline_entry: Optional[dict[str, Any]]) -> bool:
    """Whether ``check`` has a peak budget for this model, and so asks the capture to measure the step peaks
    (warm-up and measured steps, on a CUDA device): a --max-peak-ratio / max_peak_ratio, or a baseline entry that
    records a peak_ratio. Other checks capture the model as ``trace`` would, with no extra step."""
    if limits.peak_ratio is not None:
        return True
    return isinstance(baseline_entry, dict) and isinstance(baseline_entry.get("peak_ratio"), (int, float))


def region_findings(model: str, rep: Report, minimum: float) -> list[Finding]:
    """``--min-region-reuse``: each region's reuse share against the minimum. A compiled block's calls served
    from Dynamo's cache are not recorded, so its share is unknown: it fails only when it recompiled."""
    from tcinspect.analysis.regions import verdict

    regions = rep.regions.regions if rep.regions else ()
    if not regions:
        return [Finding(model, "region_reuse", "fail", "no region compiled (no nested_compile_region call and no "
                        "block compiled on its own)", rep.target.path)]
    out = []
    for r in regions:
        name = f"{r.kind} {r.function} ({r.where})"
        if r.reuse is not None:
            ok = r.reuse >= minimum
            text = (f"{name}: reuse {100 * r.reuse:.0f}% {'>=' if ok else '<'} min {100 * minimum:.0f}% "
                    f"({verdict(r)})")
        else:
            ok = r.distinct == 1 or minimum == 0
            text = f"{name}: {verdict(r)}" + ("" if ok else f"; reuse below min {100 * minimum:.0f}%")
        out.append(Finding(model, "region_reuse", "ok" if ok else "fail", text, "" if ok else rep.target.path))
    return out


def guard_latency(model: str, rep: Report) -> Optional[tuple[str, float]]:
    """The largest guard latency torch measured (compile id, us); None when no compile made guards. A report
    without the guard-cost section cannot answer: UsageError."""
    from tcinspect.analysis.guard_cost import max_latency

    if rep.guard_cost is None:
        raise UsageError(f"the report of {model} has no guard latency (saved before tcinspect recorded it, or "
                         "written with --no-timings)", f"capture it again: `tcinspect check {model} --fresh`")
    return max_latency(rep)


def guard_latency_finding(model: str, rep: Report, limit: float) -> Finding:
    """``--max-guard-latency-us``: the largest guard latency of any compile against ``limit``."""
    worst = guard_latency(model, rep)
    if worst is None:
        return Finding(model, "guard_latency", "ok", f"guard latency: no compile made guards (max {limit:g} us)")
    cid, us = worst
    status = "fail" if us > limit else "ok"
    return Finding(model, "guard_latency", status, f"guard latency {us:g} us at {cid} "
                   f"{'>' if status == 'fail' else '<='} max {limit:g} us", rep.target.path if status == "fail" else "")
