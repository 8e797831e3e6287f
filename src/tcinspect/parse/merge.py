"""The ranks of a distributed run merged into one report (pure): rank 0's report with every rank's own
under ``ranks``, and where they diverge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from tcinspect.derived.divergence import RankKeys, divergences
from tcinspect.derived.runs import mixed_runs
from tcinspect.report import OK, RankReport, Report
from tcinspect.vocabulary import outcome


def merge(base: Report, ranks: Sequence[RankReport], timings: tuple[tuple[str, float], ...] = (),
          keys: Optional[Mapping[int, RankKeys]] = None) -> Report:
    """``base`` (rank 0's report) with every rank under ``ranks``; its error names each rank that failed. ``keys``:
    what the divergence compares of each rank, where the processes that read the ranks found it. Ranks read from
    TORCH_TRACE logs also say whether their logs are one run's (``mixed_runs``)."""
    failed = [r for r in ranks if r.status != OK]
    error = "; ".join(f"rank {r.rank} {r.status}: {outcome(r)}" for r in failed)
    ordered = tuple(sorted(ranks, key=lambda r: r.rank))
    return base.replace(ranks=ordered, error=error, timings=tuple(base.timings) + tuple(timings),
                        divergence=divergences(ordered, keys), mixed_runs=mixed_runs(ordered))
