"""One `tcinspect check` run: its models, each with its limits, and its baseline, from the command's options and
[tool.tcinspect], checked before anything compiles; then its verdict over the models' reports.

Pure: the command obtains each model's report (``Model.measure_memory`` says whether its capture measures the step
peaks), hands them over in the order of ``Plan.models``, and writes the outcome and the baseline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tcinspect.analysis.check.baseline import baseline_key, load_baseline
from tcinspect.analysis.check.judge import Budgets, baseline_entry, judge
from tcinspect.analysis.check.limits import Limits, load_config, merged_limits, models_in
from tcinspect.analysis.check.outcome import Outcome
from tcinspect.analysis.check.section_findings import measures_peaks
from tcinspect.errors import UsageError
from tcinspect.report import Report


@dataclass(frozen=True)
class Model:
    """One model of the run: its key in the baseline (else its path), its file, the limits it is judged by, and
    whether its capture measures the step peaks (a peak budget)."""

    name: str
    path: str
    limits: Limits
    measure_memory: bool


@dataclass(frozen=True)
class Plan:
    """What one run checks: its models in order, their budgets, the baseline and whether it is rewritten."""

    models: tuple[Model, ...]
    budgets: Budgets
    baseline_path: Optional[Path]
    update: bool
    #: the baseline's entries by model key: None without a baseline, or when --update rewrites it
    baseline: Optional[dict[str, dict[str, Any]]]

    @staticmethod
    def of(files: Sequence[str], limits: Limits, budgets: Budgets, baseline: Optional[Path], update: bool,
           ranks: bool, start: Path = Path(".")) -> Plan:
        """The run ``files`` (default: [tool.tcinspect]'s models) ask for, judged by the command-line ``limits``
        (over the config's) and ``budgets``; ``ranks``: the run compiles on several ranks (--nproc), whose
        divergence is judged. A run with nothing to judge, or an option that needs a baseline without one, is a
        UsageError."""
        config = load_config(start)
        paths = models_in(files, config)
        if not paths:
            raise UsageError("no model files to check",
                             "pass FILE..., or list `models` under [tool.tcinspect] in pyproject.toml")
        baseline_path = baseline or (Path(config.baseline) if config.baseline else None)
        if update and baseline_path is None:
            raise UsageError("--update needs a baseline path", "pass --baseline FILE")
        if budgets.compile_time_tolerance is not None and baseline_path is None:
            raise UsageError("--compile-time-tolerance compares with a baseline", "pass --baseline FILE")
        if budgets.guard_latency_tolerance is not None and baseline_path is None:
            raise UsageError("--guard-latency-tolerance compares with a baseline", "pass --baseline FILE")
        shape_budget = budgets.max_specializations is not None or bool(budgets.static_ok)
        if budgets.expect_warm and baseline_path is None:
            raise UsageError("--expect-warm compares with a baseline", "pass --baseline FILE")
        each = {p: merged_limits(limits, config, p) for p in paths}
        judged = update or baseline_path is not None or ranks or shape_budget or any(Path(p).is_dir() for p in paths) \
            or any(one.any() for one in each.values())
        if not judged:
            raise UsageError("nothing to check: no --max-* budget and no baseline",
                             "pass e.g. --max-graph-breaks 0, or --baseline tcinspect.lock.yaml")
        base = load_baseline(baseline_path) if baseline_path is not None and not update else None
        models = []
        for path in paths:
            name = baseline_key(path, baseline_path) if baseline_path is not None else path
            entry = base.get(name) if base is not None else None
            models.append(Model(name, path, each[path], measures_peaks(each[path], entry)))
        return Plan(tuple(models), budgets, baseline_path, update, base)


@dataclass
class Verdict:
    """A run's outcome, and the baseline entries --update records (by model key)."""

    outcome: Outcome = field(default_factory=Outcome)
    snapshots: dict[str, dict[str, Any]] = field(default_factory=dict)


def verdict(plan: Plan, reports: Iterable[tuple[Model, Report]]) -> Verdict:
    """Every finding of the run, model by model as ``reports`` yields each with its report (so that a model that
    cannot be judged stops the run before the next one compiles), and with --update each model's baseline entry."""
    out = Verdict()
    for model, rep in reports:
        if plan.update:
            out.snapshots[model.name] = baseline_entry(rep, plan.budgets)
        out.outcome.findings += judge(model.name, model.path, rep, model.limits, plan.budgets, plan.baseline,
                                      plan.baseline_path)
    return out
