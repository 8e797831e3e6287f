"""`tcinspect check`'s judgement of one model's report: its budgets, its ranks, its baseline entry.

Pure: a report, the limits and the baseline in, findings (or the baseline entry to record) out. The command
obtains the reports and prints the outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tcinspect.analysis import caches, checks, divergence, shapecheck
from tcinspect.errors import UsageError
from tcinspect.report import Report


@dataclass(frozen=True)
class Budgets:
    """What a model is judged by besides its ``checks.Limits``: the options of ``tcinspect check`` that compare with a
    baseline or look at shapes."""

    max_specializations: Optional[int] = None
    static_ok: tuple[str, ...] = ()
    compile_time_tolerance: Optional[float] = None
    guard_latency_tolerance: Optional[float] = None
    expect_warm: bool = False
    #: a drop in calls_captured past this many percent of the baseline's fails (PyTorch CI's 5%)
    calls_captured_tolerance: float = checks.CALLS_CAPTURED_TOLERANCE_PCT


def judge(name: str, path: str, rep: Report, limits: checks.Limits, budgets: Budgets,
          base: Optional[dict[str, dict[str, Any]]], baseline_path: Any) -> list[checks.Finding]:
    """Every finding for the model ``name`` (``path``, its report ``rep``): each rank against ``limits``, ranks that
    diverge, sizes made constant, then (with a baseline ``base``) each comparison with the model's entry in it."""
    findings: list[checks.Finding] = []
    for prefix, one in divergence.per_rank(rep):  # a distributed report: each rank against the budgets
        findings += divergence.labelled(checks.check_limits(name, one, limits), prefix)
    findings += checks.divergence_findings(name, rep)
    findings += shapecheck.check_specializations(name, rep, budgets.max_specializations, list(budgets.static_ok))
    if base is None:
        return findings
    if name not in base:
        raise UsageError(f"{name} is not in baseline {baseline_path}",
                         f"add it with `tcinspect check {path} --baseline {baseline_path} --update`")
    entry = base[name]
    for prefix, one in divergence.per_rank(rep):
        findings += divergence.labelled(checks.compare(name, one, entry), prefix)
    if "specialized" in entry:  # recorded since baselines hold it
        findings += shapecheck.compare(name, rep, entry)
    findings += checks.compare_coverage(name, rep, entry, budgets.calls_captured_tolerance)
    findings += checks.compare_memory(name, rep, entry)
    if budgets.compile_time_tolerance is not None:
        findings.append(checks.compare_compile_time(name, rep, entry, budgets.compile_time_tolerance, baseline_path))
    if budgets.guard_latency_tolerance is not None:
        findings.append(checks.compare_guard_latency(name, rep, entry, budgets.guard_latency_tolerance,
                                                     baseline_path))
    if budgets.expect_warm:
        if not isinstance(entry.get("warm"), dict):
            raise UsageError(f"baseline {baseline_path} has no cache record for {name}",
                             f"record one on a warm run with `tcinspect check {path} --baseline "
                             f"{baseline_path} --update --expect-warm`")
        findings += [checks.Finding(name, what, status, text, rep.target.path if status == "fail" else "")
                     for what, status, text in caches.expect_warm_findings(name, rep, entry, path)]
    return checks.not_improvements(findings)


def baseline_entry(rep: Report, budgets: Budgets) -> dict[str, Any]:
    """What ``check --update`` records for one model: its counts, and what the budgets asked to record."""
    entry = {**checks.snapshot(rep, compile_time=budgets.compile_time_tolerance is not None,
                               guard_latency_us=budgets.guard_latency_tolerance is not None),
             **shapecheck.snapshot_entry(rep)}
    if budgets.expect_warm:
        entry["warm"] = caches.warm_record(rep)
    return entry
