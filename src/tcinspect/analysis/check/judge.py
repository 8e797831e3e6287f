"""`tcinspect check`'s judgement of one model's report: its limits, its ranks, its sizes made constant, its baseline
entry.

Pure: a report, the limits and the baseline in, findings (or the baseline entry to record) out. The command
obtains the reports and prints the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tcinspect.analysis import caches, divergence
from tcinspect.analysis.check import baseline, ranks, specializations
from tcinspect.analysis.check.limits import SECTION_METRICS, Limits, metric
from tcinspect.analysis.check.outcome import Finding, not_improvements
from tcinspect.analysis.check.section_findings import (
    CALLS_CAPTURED_TOLERANCE_PCT,
    cause,
    compare_coverage,
    compare_memory,
    coverage_finding,
    cudagraph_coverage_finding,
    guard_latency_finding,
    memory_limits,
    region_findings,
)
from tcinspect.errors import UsageError
from tcinspect.report import Report


@dataclass(frozen=True)
class Budgets:
    """What a model is judged by besides its ``Limits``: the options of ``tcinspect check`` that compare with a
    baseline or look at shapes."""

    max_specializations: Optional[int] = None
    static_ok: tuple[str, ...] = ()
    compile_time_tolerance: Optional[float] = None
    guard_latency_tolerance: Optional[float] = None
    expect_warm: bool = False
    #: a drop in calls_captured past this many percent of the baseline's fails (PyTorch CI's 5%)
    calls_captured_tolerance: float = CALLS_CAPTURED_TOLERANCE_PCT


def check_limits(model: str, rep: Report, limits: Limits) -> list[Finding]:
    """A finding for each of ``limits`` that is set: the report's counts, compile time, section counts and shares."""
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
            out.append(Finding(model, name, "fail", f"{name} {count} > max {limit}{cause(name, rep)}",
                               rep.target.path))
        else:
            out.append(Finding(model, name, "ok", f"{name} {count} <= max {limit}"))
    if limits.guard_latency_us is not None:
        out.append(guard_latency_finding(model, rep, limits.guard_latency_us))
    if limits.min_region_reuse is not None:
        out += region_findings(model, rep, limits.min_region_reuse)
    if limits.min_coverage is not None:
        out.append(coverage_finding(model, rep, limits.min_coverage))
    if limits.min_cudagraph_coverage is not None:
        out.append(cudagraph_coverage_finding(model, rep, limits.min_cudagraph_coverage))
    out += memory_limits(model, rep, limits)
    return out


def judge(name: str, path: str, rep: Report, limits: Limits, budgets: Budgets,
          base: Optional[dict[str, dict[str, Any]]], baseline_path: Any) -> list[Finding]:
    """Every finding for the model ``name`` (``path``, its report ``rep``): each rank against ``limits``, ranks that
    diverge, sizes made constant, then (with a baseline ``base``) each comparison with the model's entry in it."""
    findings: list[Finding] = []
    for prefix, one in divergence.per_rank(rep):  # a distributed report: each rank against the budgets
        findings += divergence.labelled(check_limits(name, one, limits), prefix)
    findings += ranks.divergence_findings(name, rep)
    findings += specializations.check_specializations(name, rep, budgets.max_specializations, list(budgets.static_ok))
    if base is None:
        return findings
    if name not in base:
        raise UsageError(f"{name} is not in baseline {baseline_path}",
                         f"add it with `tcinspect check {path} --baseline {baseline_path} --update`")
    entry = base[name]
    for prefix, one in divergence.per_rank(rep):
        findings += divergence.labelled(baseline.compare(name, one, entry), prefix)
    if "specialized" in entry:  # recorded since baselines hold it
        findings += specializations.compare(name, rep, entry)
    findings += compare_coverage(name, rep, entry, budgets.calls_captured_tolerance)
    findings += compare_memory(name, rep, entry)
    if budgets.compile_time_tolerance is not None:
        findings.append(baseline.compare_compile_time(name, rep, entry, budgets.compile_time_tolerance, baseline_path))
    if budgets.guard_latency_tolerance is not None:
        findings.append(baseline.compare_guard_latency(name, rep, entry, budgets.guard_latency_tolerance,
                                                       baseline_path))
    if budgets.expect_warm:
        if not isinstance(entry.get("warm"), dict):
            raise UsageError(f"baseline {baseline_path} has no cache record for {name}",
                             f"record one on a warm run with `tcinspect check {path} --baseline "
                             f"{baseline_path} --update --expect-warm`")
        findings += [Finding(name, what, status, text, rep.target.path if status == "fail" else "")
                     for what, status, text in caches.expect_warm_findings(name, rep, entry, path)]
    return not_improvements(findings)


def baseline_entry(rep: Report, budgets: Budgets) -> dict[str, Any]:
    """What ``check --update`` records for one model: its counts, and what the budgets asked to record."""
    entry = {**baseline.snapshot(rep, compile_time=budgets.compile_time_tolerance is not None,
                                 guard_latency_us=budgets.guard_latency_tolerance is not None),
             **specializations.snapshot_entry(rep)}
    if budgets.expect_warm:
        entry["warm"] = caches.warm_record(rep)
    return entry
