"""`tcinspect check --baseline`: a model's snapshot (counts and identities, no paths), the baseline file that holds
one per model, and a report compared with its entry (regressions fail, improvements are said). Pure."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.check.limits import METRICS, SECTION_METRICS, metric
from tcinspect.analysis.check.outcome import Finding, pct
from tcinspect.analysis.check.section_findings import cause, guard_latency, saved_bytes
from tcinspect.errors import ReportFormatError, UsageError
from tcinspect.report import GraphBreak, Report

BASELINE_SCHEMA = 1


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
            out.append(Finding(model, name, "fail", f"{name} {now_value} > baseline {before_value}{cause(name, rep)}",
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
            out.append(Finding(model, "region_reuse", "fail", f"region reuse {pct(now_reuse)} < baseline "
                               f"{pct(before_reuse)}", rep.target.path))
        else:
            out.append(Finding(model, "region_reuse", "ok" if now_reuse == before_reuse else "improved",
                               f"region reuse {pct(now_reuse)} {'=' if now_reuse == before_reuse else '>'} baseline "
                               f"{pct(before_reuse)}"))
    return out


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
    """A baseline file's text: its header, then each model's entry, by key."""
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


def updated(path: Path, snapshots: dict[str, dict[str, Any]]) -> str:
    """The baseline's new text (``check --update``): this run's entries, over those of models it did not check."""
    models: dict[str, dict[str, Any]] = {}
    if path.is_file():
        try:
            models = load_baseline(path)
        except Exception:  # noqa: BLE001 - a broken baseline is being replaced
            models = {}
    models.update(snapshots)
    return dump_baseline(models)
