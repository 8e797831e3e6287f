"""CI checks: thresholds and baselines over reports. Pure: no torch, no printing."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import yaml

from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.divergence import (
    INFORMATIONAL_ASPECTS,
    TELLING_ASPECTS,
    break_line,
    consequence,
    describe,
    first_compile,
)
from tcinspect.derived.divergence import compile_order
from tcinspect.errors import ReportFormatError, UsageError
from tcinspect.report import OK, GraphBreak, Report, sections

BASELINE_SCHEMA = 1
#: The counts a threshold or a baseline can limit, as named in the report's summary.
METRICS = ("graphs", "graph_breaks", "recompiles", "kernels")


@dataclass(frozen=True)
class Limits:
    """Upper bounds; None means unchecked."""

    graphs: Optional[int] = None
    graph_breaks: Optional[int] = None
    recompiles: Optional[int] = None
    kernels: Optional[int] = None
    #: seconds of compile time, forward and backward (``--max-compile-time``)
    compile_time_s: Optional[float] = None
    #: CUDA graphs (``--max-cudagraph-skips``, ``--max-cudagraph-recordings``)
    cudagraph_skips: Optional[int] = None
    cudagraph_recordings: Optional[int] = None
    #: microseconds of guard latency, the largest of any compile's (``--max-guard-latency-us``)
    guard_latency_us: Optional[float] = None
    #: lowest share of a region's calls that reuse an earlier call's subgraph, 0-1 (``--min-region-reuse``)
    min_region_reuse: Optional[float] = None
    #: bytes the forward graphs save for backward (``--max-saved-bytes``)
    saved_bytes: Optional[int] = None
    #: compiled / eager peak of one training step, measured on a CUDA GPU (``--max-peak-ratio``)
    peak_ratio: Optional[float] = None
    #: frames Dynamo gave up on and ran eagerly, PyTorch CI's fallbacks_to_eager (``--max-fallbacks-to-eager``)
    fallbacks_to_eager: Optional[int] = None
    #: lowest share of the measured call's ATen ops that run compiled, 0-1 (``--min-coverage``)
    min_coverage: Optional[float] = None
    #: lowest share of the compiled graphs' kernels that run inside CUDA graphs, 0-1 (``--min-cudagraph-coverage``)
    min_cudagraph_coverage: Optional[float] = None

    def items(self) -> list[tuple[str, int]]:
        return [(m, getattr(self, m)) for m in METRICS if getattr(self, m) is not None]

    def any(self) -> bool:
        return bool(self.items()) or any(v is not None for v in (
            self.compile_time_s, self.guard_latency_us, self.min_region_reuse, self.saved_bytes, self.peak_ratio,
            self.min_coverage, self.min_cudagraph_coverage)) \
            or any(getattr(self, m) is not None for m in SECTION_METRICS)


#: Counts of an optional report section a budget or a baseline can limit, as each section registers them
#: (report/sections.py): None when the run has no such section (e.g. CUDA graphs were off), which no budget judges.
SECTION_METRICS: dict[str, Callable[[Report], Optional[int]]] = {
    name: sections.implementation(path) for s in sections.SECTIONS for name, path in s.metrics.items()}
#: PyTorch CI's tolerance for a drop in calls_captured (benchmarks/dynamo/check_graph_breaks.py): 5 percent
CALLS_CAPTURED_TOLERANCE_PCT = 5.0


@dataclass(frozen=True)
class BreakKey:
    """A graph break's identity in a baseline: type, function and the line's text (not its number),
    so an unrelated edit that shifts lines does not change it."""

    type: str
    function: str
    code: str

    @staticmethod
    def of(b: GraphBreak) -> BreakKey:
        loc = b.user_frame
        return BreakKey(b.break_type, loc.function if loc else "", (loc.code if loc else "").strip())


@dataclass(frozen=True)
class Finding:
    """One check result line: a regression (fails), an improvement or a pass."""

    model: str
    check: str  # e.g. "graph_breaks", "new graph break", "recompile reason"
    status: str  # "fail" | "improved" | "ok"
    message: str
    file: str = ""
    line: int = 0


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.status == "fail" for f in self.findings)


def metric(rep: Report, name: str) -> int:
    return int(getattr(rep.summary, name))


def check_limits(model: str, rep: Report, limits: Limits) -> list[Finding]:
    out = []
    for name, limit in limits.items():
        value = metric(rep, name)
        if value > limit:
            out.append(Finding(model, name, "fail", f"{name} {value} > max {limit}", rep.target.path))
        else:
            out.append(Finding(model, name, "ok", f"{name} {value} <= max {limit}"))
    if limits.compile_time_s is not None:
        took = rep.summary.compile_time_s
        status = "fail" if took > limits.compile_time_s else "ok"
        out.append(Finding(model, "compile_time", status, f"compile time {took:.2f} s "
                           f"{'>' if status == 'fail' else '<='} max {limits.compile_time_s:g} s",
                           rep.target.path if status == "fail" else ""))
    for name, read in SECTION_METRICS.items():
        limit = getattr(limits, name)
        if limit is None:
            continue
        count = read(rep)
        if count is None:
            out.append(Finding(model, name, "ok", f"{name}: not in this run (CUDA graphs off), max {limit}"))
        elif count > limit:
            out.append(Finding(model, name, "fail", f"{name} {count} > max {limit}{_why(name, rep)}",
                               rep.target.path))
        else:
            out.append(Finding(model, name, "ok", f"{name} {count} <= max {limit}"))
    if limits.guard_latency_us is not None:
        out.append(_guard_latency_finding(model, rep, limits.guard_latency_us))
    if limits.min_region_reuse is not None:
        out += region_findings(model, rep, limits.min_region_reuse)
    if limits.min_coverage is not None:
        out.append(coverage_finding(model, rep, limits.min_coverage))
    if limits.min_cudagraph_coverage is not None:
        out.append(cudagraph_coverage_finding(model, rep, limits.min_cudagraph_coverage))
    out += memory_limits(model, rep, limits)
    return out


def coverage_finding(model: str, rep: Report, minimum: float) -> Finding:
    """``--min-coverage``: the measured call's ATen ops that ran compiled; not measured is said, not judged."""
    from tcinspect.analysis.coverage import compiled_share

    runtime = rep.coverage.runtime if rep.coverage is not None else None
    share = compiled_share(runtime)
    if share is None or runtime is None:
        why = runtime.not_measured if runtime is not None and runtime.not_measured else \
            "no call was measured (a report saved before tcinspect measured coverage)"
        return Finding(model, "coverage", "ok", f"coverage not measured ({why}): min {_pct(minimum)} not judged")
    worst = runtime.islands[0] if runtime.islands else None
    where = f"; most eager ops at {worst.file.rsplit('/', 1)[-1]}:{worst.line} `{worst.code}`" if worst else ""
    if share < minimum:
        return Finding(model, "coverage", "fail", f"coverage {_pct(share)} of ATen ops ran compiled < min "
                       f"{_pct(minimum)} ({runtime.eager_ops} of {runtime.ops} ran eagerly{where})",
                       worst.file if worst else rep.target.path, worst.line if worst else 0)
    return Finding(model, "coverage", "ok", f"coverage {_pct(share)} of ATen ops ran compiled >= min {_pct(minimum)}")


def cudagraph_coverage_finding(model: str, rep: Report, minimum: float) -> Finding:
    """``--min-cudagraph-coverage``: the compiled graphs' kernels inside CUDA graphs; a run without CUDA graphs (or
    without kernels) is said, not judged. A failure names the costliest eager island and its line."""
    from tcinspect.analysis.cudagraphs import islands, kernel_share

    share = kernel_share(rep.cudagraphs)
    if share is None or rep.cudagraphs is None:
        return Finding(model, "cudagraph_coverage", "ok", "CUDA-graph coverage: not in this run (CUDA graphs off, or "
                       f"no kernels): min {_pct(minimum)} not judged")
    cg = rep.cudagraphs
    text = f"CUDA-graph coverage {_pct(share)} of kernels ({cg.kernels_in_cudagraphs} of {cg.kernels})"
    if share >= minimum:
        return Finding(model, "cudagraph_coverage", "ok", f"{text} >= min {_pct(minimum)}")
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
    return Finding(model, "cudagraph_coverage", "fail", f"{text} < min {_pct(minimum)}{where}{skipped}", file, line)


def _why(name: str, rep: Report) -> str:
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
                        f"{100 * (before - now) / before:.0f}%, more than {tolerance_pct:g}%){_why('fallbacks_to_eager', rep)}",
                        rep.target.path)]
    if now > before:
        return [Finding(model, "calls_captured", "improved", f"calls captured {now} > baseline {before}")]
    within = "" if now == before else f" (within {tolerance_pct:g}%)"
    return [Finding(model, "calls_captured", "ok", f"calls captured {now} {'=' if now == before else '<'} baseline "
                    f"{before}{within}")]


def coverage_fell(findings: Sequence[Finding]) -> bool:
    """Less of the model runs compiled than in the baseline: fewer calls captured or more frames run eagerly."""
    return any(f.status == "fail" and f.check in ("calls_captured", "fallbacks_to_eager") for f in findings)


def not_improvements(findings: Sequence[Finding]) -> list[Finding]:
    """When coverage fell, fewer kernels, graphs, breaks or saved bytes are what the eager code no longer compiles:
    said as such, never as an improvement."""
    if not coverage_fell(findings):
        return list(findings)
    return [replace(f, status="ok", message=f"{f.message} (not an improvement: less of the model runs compiled)")
            if f.status == "improved" and f.check not in ("calls_captured", "fallbacks_to_eager") else f
            for f in findings]


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


def _cudagraph_why(rep: Report) -> str:
    """The skips torch gave, for a failing CUDA graph budget's message."""
    cg = rep.cudagraphs
    skipped = [g for g in cg.graphs if g.status == "skipped"] if cg is not None else []
    return "".join(f"; {g.compile_id} {g.part} skipped: {g.reason}" for g in skipped)


def guard_latency(model: str, rep: Report) -> Optional[tuple[str, float]]:
    """The largest guard latency torch measured (compile id, us); None when no compile made guards. A report
    without the guard-cost section cannot answer: UsageError."""
    from tcinspect.analysis.guard_cost import max_latency

    if rep.guard_cost is None:
        raise UsageError(f"the report of {model} has no guard latency (saved before tcinspect recorded it, or "
                         "written with --no-timings)", f"capture it again: `tcinspect check {model} --fresh`")
    return max_latency(rep)


def _guard_latency_finding(model: str, rep: Report, limit: float) -> Finding:
    worst = guard_latency(model, rep)
    if worst is None:
        return Finding(model, "guard_latency", "ok", f"guard latency: no compile made guards (max {limit:g} us)")
    cid, us = worst
    status = "fail" if us > limit else "ok"
    return Finding(model, "guard_latency", status, f"guard latency {us:g} us at {cid} "
                   f"{'>' if status == 'fail' else '<='} max {limit:g} us", rep.target.path if status == "fail" else "")


# ----------------------------------------------------------------------------- baselines


def snapshot(rep: Report, compile_time: bool = False, guard_latency_us: bool = False) -> dict[str, Any]:
    """A model's baseline entry: counts and identities, sorted, with no paths; timings only when asked
    (``compile_time``: the compile time a tolerance is later measured against; ``guard_latency_us``: the
    largest guard latency, likewise)."""
    breaks = sorted({BreakKey.of(d.first) for d in distinct_breaks(rep)}, key=lambda k: (k.function, k.code, k.type))
    reasons = sorted({r for rc in rep.stages.dynamo.recompiles for r in rc.reasons})
    entry: dict[str, Any] = {m: metric(rep, m) for m in METRICS}
    entry["breaks"] = [{"type": k.type, "function": k.function, "code": k.code} for k in breaks]
    entry["recompile_reasons"] = reasons
    if rep.coverage is not None:  # only a report with coverage: older baselines stay as they were
        entry["calls_captured"] = rep.coverage.calls_captured
        runtime = rep.coverage.runtime
        if runtime is not None and not runtime.not_measured:  # the measured call's ATen ops that ran eagerly
            entry["eager_ops"] = runtime.eager_ops
    if compile_time:
        entry["compile_time_s"] = round(rep.summary.compile_time_s, 3)
    for name, read in SECTION_METRICS.items():
        value = read(rep)
        if value is not None:
            entry[name] = value
    if guard_latency_us:
        worst = guard_latency(rep.target.path or rep.target.model_name, rep)
        entry["guard_latency_us"] = worst[1] if worst else 0
    from tcinspect.analysis.regions import lowest_reuse

    reuse = lowest_reuse(rep)
    if reuse is not None:  # only a run with regions: other baselines stay as they were
        entry["region_reuse"] = reuse
    if rep.memory is not None:
        from tcinspect.analysis.memory import peak_ratio

        entry["saved_bytes"] = saved_bytes(rep)
        ratio = peak_ratio(rep)
        if ratio is not None:
            entry["peak_ratio"] = ratio
    return entry


def compare_compile_time(model: str, rep: Report, base: dict[str, Any], tolerance_pct: float,
                         baseline_path: Any) -> Finding:
    """Compile time against the baseline's, relative: fails past ``tolerance_pct`` percent slower."""
    before = _recorded(base, "compile_time_s", "compile time", "--compile-time-tolerance", model, tolerance_pct,
                       baseline_path)
    now = rep.summary.compile_time_s
    return compare_relative(model, "compile_time", now, before, tolerance_pct, rep.target.path,
                            lambda change: f"compile time {now:.2f} s vs baseline {before:.2f} s ({change})")


def compare_guard_latency(model: str, rep: Report, base: dict[str, Any], tolerance_pct: float,
                          baseline_path: Any) -> Finding:
    """The largest guard latency against the baseline's, relative: fails past ``tolerance_pct`` percent more."""
    before = _recorded(base, "guard_latency_us", "guard latency", "--guard-latency-tolerance", model, tolerance_pct,
                       baseline_path)
    worst = guard_latency(model, rep)
    now = worst[1] if worst else 0.0
    return compare_relative(model, "guard_latency", now, before, tolerance_pct, rep.target.path,
                            lambda change: f"guard latency {now:g} us{f' at {worst[0]}' if worst else ''} vs "
                                           f"baseline {before:g} us ({change})")


def compare_relative(model: str, what: str, now: float, before: float, tolerance_pct: float, path: str,
                     text: Callable[[str], str]) -> Finding:
    """A measurement against the baseline's, relative: ``fail`` past ``tolerance_pct`` percent more, ``improved``
    past as much less, else ``ok``; ``text`` words it around "+12%, tolerance 10%"."""
    change = 100.0 * (now - before) / before
    words = text(f"{change:+.0f}%, tolerance {tolerance_pct:g}%")
    if change > tolerance_pct:
        return Finding(model, what, "fail", words, path)
    if change < -tolerance_pct:
        return Finding(model, what, "improved", words)
    return Finding(model, what, "ok", words)


def _recorded(base: dict[str, Any], key: str, words: str, option: str, model: str, tolerance_pct: float,
              baseline_path: Any) -> float:
    """The baseline's positive number under ``key``, else the usage error that says how to record it."""
    before = base.get(key)
    if isinstance(before, bool) or not isinstance(before, (int, float)) or before <= 0:
        raise UsageError(f"baseline {baseline_path} has no {words} for {model}",
                         f"record one with `tcinspect check {model} --baseline {baseline_path} --update "
                         f"{option} {tolerance_pct:g}`")
    return float(before)


def baseline_key(model_path: str, baseline_path: Path) -> str:
    """A model file's key in a baseline: its path relative to the baseline's directory, with '/'."""
    rel = os.path.relpath(os.path.abspath(model_path), os.path.abspath(baseline_path.parent or Path(".")))
    return rel.replace(os.sep, "/")


def dump_baseline(models: dict[str, dict[str, Any]]) -> str:
    data = {"schema_version": BASELINE_SCHEMA, "models": {k: models[k] for k in sorted(models)}}
    header = "# tcinspect baseline: what `tcinspect check --baseline` compares against.\n" \
             "# Regenerate with `tcinspect check --baseline THIS_FILE --update`.\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def load_baseline(path: Path) -> dict[str, dict[str, Any]]:
    """Read a baseline; any problem is one ReportFormatError naming the file (never 'no regressions')."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFormatError(f"baseline {path} does not exist",
                                f"create it with `tcinspect check FILE --baseline {path} --update`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"cannot read baseline {path}: {exc}", "check the path") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ReportFormatError(f"baseline {path} is not valid YAML",
                                f"regenerate it with `tcinspect check --baseline {path} --update`") from None
    if not isinstance(data, dict) or "models" not in data or not isinstance(data.get("models"), dict):
        raise ReportFormatError(f"baseline {path} is not a tcinspect baseline (no 'models' mapping)",
                                f"regenerate it with `tcinspect check --baseline {path} --update`")
    if data.get("schema_version") != BASELINE_SCHEMA:
        raise ReportFormatError(f"baseline {path} has schema version {data.get('schema_version')!r}, "
                                f"not {BASELINE_SCHEMA}", f"regenerate it with `tcinspect check --baseline {path} --update`")
    for key, entry in data["models"].items():
        if not isinstance(entry, dict) or any(not isinstance(entry.get(m), int) for m in METRICS) \
                or not isinstance(entry.get("breaks", []), list):
            raise ReportFormatError(f"baseline {path}: the entry for {key} is malformed",
                                    f"regenerate it with `tcinspect check --baseline {path} --update`")
    models: dict[str, dict[str, Any]] = data["models"]  # each entry checked above
    return models


def compare(model: str, rep: Report, base: dict[str, Any]) -> list[Finding]:
    """Regressions and improvements of a report against its baseline entry."""
    out: list[Finding] = []
    for name in METRICS:
        now, before = metric(rep, name), int(base[name])
        if now > before:
            out.append(Finding(model, name, "fail", f"{name} {now} > baseline {before}", rep.target.path))
        elif now < before:
            out.append(Finding(model, name, "improved", f"{name} {now} < baseline {before}"))
        else:
            out.append(Finding(model, name, "ok", f"{name} {now} = baseline"))
    known = {BreakKey(str(b.get("type", "")), str(b.get("function", "")), str(b.get("code", "")).strip())
             for b in base.get("breaks", []) if isinstance(b, dict)}
    current: dict[BreakKey, GraphBreak] = {}
    for d in distinct_breaks(rep):
        current.setdefault(BreakKey.of(d.first), d.first)
    for key, brk in current.items():
        if key not in known:
            loc = brk.user_frame
            where = f"{loc.short()} in {loc.function}" if loc else "?"
            out.append(Finding(model, "new graph break", "fail",
                               f"new graph break at {where}: {brk.break_type} — `{key.code}`",
                               loc.file if loc else "", loc.line if loc else 0))
    for key in sorted(known - set(current), key=lambda k: (k.function, k.code)):
        out.append(Finding(model, "fixed graph break", "improved",
                           f"graph break fixed: {key.type} in {key.function} — `{key.code}`"))
    for name, read in SECTION_METRICS.items():
        now_value, before_value = read(rep), base.get(name)
        if now_value is None or isinstance(before_value, bool) or not isinstance(before_value, int):
            continue  # recorded on one side only: nothing to compare
        if now_value > before_value:
            out.append(Finding(model, name, "fail", f"{name} {now_value} > baseline {before_value}{_why(name, rep)}",
                               rep.target.path))
        elif now_value < before_value:
            out.append(Finding(model, name, "improved", f"{name} {now_value} < baseline {before_value}"))
        else:
            out.append(Finding(model, name, "ok", f"{name} {now_value} = baseline"))
    old_reasons = set(base.get("recompile_reasons", []) or [])
    for reason in sorted({r for rc in rep.stages.dynamo.recompiles for r in rc.reasons} - old_reasons):
        out.append(Finding(model, "new recompile reason", "fail", f"new recompile reason: {reason}", rep.target.path))
    before_reuse = base.get("region_reuse")
    if isinstance(before_reuse, (int, float)) and not isinstance(before_reuse, bool):
        from tcinspect.analysis.regions import lowest_reuse

        now_reuse = lowest_reuse(rep)
        if now_reuse is None or now_reuse < before_reuse:
            out.append(Finding(model, "region_reuse", "fail", f"region reuse {_pct(now_reuse)} < baseline "
                               f"{_pct(before_reuse)}", rep.target.path))
        else:
            out.append(Finding(model, "region_reuse", "ok" if now_reuse == before_reuse else "improved",
                               f"region reuse {_pct(now_reuse)} {'=' if now_reuse == before_reuse else '>'} baseline "
                               f"{_pct(before_reuse)}"))
    return out


def _pct(share: Optional[float]) -> str:
    return "none" if share is None else f"{100 * share:.0f}%"


def parse_limits(values: dict[str, Any], where: str) -> Limits:
    """Limits from a config mapping (``max_graph_breaks = 0`` ...), checked."""
    kwargs = {}
    for m in (*METRICS, *SECTION_METRICS):
        key = f"max_{m}"
        if key in values:
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise UsageError(f"{where}: {key} must be a whole number >= 0, not {v!r}", f"fix {key} in {where}")
            kwargs[m] = v
    seconds = values.get("max_compile_time")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0):
        raise UsageError(f"{where}: max_compile_time must be a number of seconds > 0, not {seconds!r}",
                         f"fix max_compile_time in {where}")
    latency = values.get("max_guard_latency_us")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float)) or latency <= 0):
        raise UsageError(f"{where}: max_guard_latency_us must be a number of microseconds > 0, not {latency!r}",
                         f"fix max_guard_latency_us in {where}")
    reuse = values.get("min_region_reuse")
    if reuse is not None and (isinstance(reuse, bool) or not isinstance(reuse, (int, float)) or not 0 <= reuse <= 1):
        raise UsageError(f"{where}: min_region_reuse must be a share from 0 to 1, not {reuse!r}",
                         f"fix min_region_reuse in {where}")
    saved = values.get("max_saved_bytes")
    if saved is not None and (isinstance(saved, bool) or not isinstance(saved, int) or saved < 0):
        raise UsageError(f"{where}: max_saved_bytes must be a whole number >= 0, not {saved!r}",
                         f"fix max_saved_bytes in {where}")
    least = values.get("min_coverage")
    if least is not None and (isinstance(least, bool) or not isinstance(least, (int, float)) or not 0 <= least <= 1):
        raise UsageError(f"{where}: min_coverage must be a share from 0 to 1, not {least!r}",
                         f"fix min_coverage in {where}")
    graphed = values.get("min_cudagraph_coverage")
    if graphed is not None and (isinstance(graphed, bool) or not isinstance(graphed, (int, float))
                                or not 0 <= graphed <= 1):
        raise UsageError(f"{where}: min_cudagraph_coverage must be a share from 0 to 1, not {graphed!r}",
                         f"fix min_cudagraph_coverage in {where}")
    ratio = values.get("max_peak_ratio")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0):
        raise UsageError(f"{where}: max_peak_ratio must be a number > 0, not {ratio!r}", f"fix max_peak_ratio in {where}")
    return Limits(**kwargs, compile_time_s=float(seconds) if seconds is not None else None,
                  guard_latency_us=float(latency) if latency is not None else None,
                  min_region_reuse=float(reuse) if reuse is not None else None, saved_bytes=saved,
                  peak_ratio=float(ratio) if ratio is not None else None,
                  min_coverage=float(least) if least is not None else None,
                  min_cudagraph_coverage=float(graphed) if graphed is not None else None)


@dataclass(frozen=True)
class Config:
    """[tool.tcinspect] in pyproject.toml."""

    models: tuple[str, ...] = ()
    limits: Limits = Limits()
    per_model: dict[str, Limits] = field(default_factory=dict)
    baseline: Optional[str] = None


def load_config(start: Path = Path(".")) -> Config:
    """[tool.tcinspect] from the nearest pyproject.toml at or above ``start`` (empty if none)."""
    for d in [start.resolve(), *start.resolve().parents]:
        p = d / "pyproject.toml"
        if p.is_file():
            return _parse_config(p)
    return Config()


def _parse_config(path: Path) -> Config:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML ({exc})", f"fix {path}") from None
    section = data.get("tool", {}).get("tcinspect", {})
    if not isinstance(section, dict):
        raise UsageError(f"{path}: [tool.tcinspect] is not a table", f"fix {path}")
    where = f"{path} [tool.tcinspect]"
    models = section.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise UsageError(f"{where}: models must be a list of paths", f"fix {path}")
    base = path.parent
    per_model = {}
    for key, values in (section.get("model") or {}).items():
        if not isinstance(values, dict):
            raise UsageError(f"{where}: model.{key!r} must be a table of max_* budgets", f"fix {path}")
        per_model[str((base / key).resolve())] = parse_limits(values, f"{where} model.{key!r}")
    baseline = section.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise UsageError(f"{where}: baseline must be a path", f"fix {path}")
    return Config(
        models=tuple(str(base / m) for m in models),
        limits=parse_limits(section, where),
        per_model=per_model,
        baseline=str(base / baseline) if baseline else None,
    )


def merged_limits(cli: Limits, config: Config, model_path: str) -> Limits:
    """Command-line limits win over per-model budgets, which win over the config's defaults."""
    per = config.per_model.get(str(Path(model_path).resolve()), Limits())
    kwargs = {}
    for m in (*METRICS, "compile_time_s", "guard_latency_us", "min_region_reuse", "saved_bytes", "peak_ratio",
              "min_coverage", "min_cudagraph_coverage", *SECTION_METRICS):
        for source in (cli, per, config.limits):
            if getattr(source, m) is not None:
                kwargs[m] = getattr(source, m)
                break
    return Limits(**kwargs)


def models_in(files: Sequence[str], config: Config) -> list[str]:
    return list(files) if files else list(config.models)


def divergence_findings(model: str, rep: Report) -> list[Any]:
    """``check``'s findings: a failure for ranks that ended differently and one for the first compile
    where they differ (at the user's line of a break only some ranks took); one pass if they agree."""
    if not rep.ranks:
        return []
    # a cache outcome that differs (one rank filled a shared cache, the others read it) is shown, not failed
    divs = tuple(d for d in rep.divergence if d.aspect not in INFORMATIONAL_ASPECTS)
    if not divs and any(r.status != OK for r in rep.ranks):
        return []  # every rank failed alike: the failure is the finding, not an agreement
    if not divs:
        return [Finding(model, "rank divergence", "ok", f"all {len(rep.ranks)} ranks compiled the same")]
    out = [Finding(model, "rank divergence", "fail", describe(d), rep.target.path) for d in divs if not d.compile_id]
    first = first_compile(divs)
    if first:
        here = [d for d in divs if d.compile_id == first]
        lead = min(here, key=lambda d: TELLING_ASPECTS.index(d.aspect) if d.aspect in TELLING_ASPECTS else len(TELLING_ASPECTS))
        later = sorted({d.compile_id for d in divs if d.compile_id and d.compile_id != first}, key=compile_order)
        # what the job feels first (a compile, collectives or graphs only some ranks run), then where ranks first differ
        said = consequence(rep, divs)
        message = ((f"ranks diverge: {said}; first at compile " if said else "ranks diverge first at compile ")
                   + f"{first} ({', '.join(d.aspect for d in here)}): " + describe(lead).split("): ", 1)[1]
                   + (f"; later compiles differ too: {', '.join(later)}" if later else ""))
        file, line = break_line(rep.ranks, first) if lead.aspect == "graph_breaks" else (rep.target.path, 0)
        out.append(Finding(model, "rank divergence", "fail", message, file, line))
    return out


def measures_peaks(limits: Limits, baseline_entry: Optional[dict[str, Any]]) -> bool:
    """Whether ``check`` has a peak budget for this model, and so asks the capture to measure the step peaks
    (warm-up and measured steps, on a CUDA device): a --max-peak-ratio / max_peak_ratio, or a baseline entry that
    records a peak_ratio. Other checks capture the model as ``trace`` would, with no extra step."""
    if limits.peak_ratio is not None:
        return True
    return isinstance(baseline_entry, dict) and isinstance(baseline_entry.get("peak_ratio"), (int, float))
