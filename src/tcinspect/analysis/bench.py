"""The kernel benchmark (`codegen --bench`) in the orders it is shown, and each launch's share of the time (pure)."""

from __future__ import annotations

from typing import Any

from tcinspect.report import Report

#: `codegen --bench --sort`: most in-step time first (the default when the step was profiled), slowest
#: isolated replay first, furthest below the roofline first, or as launched.
BENCH_SORTS = ("step", "time", "peak", "launch")


def bench_rows(rep: Report, sort: str = "time") -> list[tuple[int, Any]]:
    """The benchmarked kernels as (launch number, KernelTiming), sorted; untimed ones last."""
    rows = list(enumerate(rep.bench.kernels if rep.bench is not None else ()))
    if sort == "launch":
        return rows
    if sort == "step" and rep.bench is not None and rep.bench.step is not None:
        return sorted(rows, key=lambda r: (-r[1].in_step_us, -r[1].median_us))
    if sort == "step":  # no profiled step in this report: the isolated replay times
        sort = "time"
    timed = [r for r in rows if r[1].median_us > 0]
    untimed = [r for r in rows if r[1].median_us <= 0]
    if sort == "peak":
        timed.sort(key=lambda r: (r[1].pct_of_roofline, -r[1].median_us))
    else:
        timed.sort(key=lambda r: -r[1].median_us)
    return timed + untimed


def kernel_time_share(rep: Report) -> dict[tuple[str, str, int], float]:
    """(compile id, part, index) -> that launch's share of the benchmarked GPU time (empty without --bench)."""
    if rep.bench is None:
        return {}
    total = sum(t.median_us for t in rep.bench.kernels if t.median_us > 0)
    if total <= 0:
        return {}
    return {(t.compile_id, t.part, t.index): t.median_us / total for t in rep.bench.kernels if t.median_us > 0}
