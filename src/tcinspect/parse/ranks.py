"""The ranks of a distributed run, merged into one report (pure): rank 0's report with every rank's own
under ``ranks``, and the words for how each rank ended."""

from __future__ import annotations

from collections.abc import Sequence

from tcinspect.report import OK, RankReport, Report

#: Rank statuses with no result file: the rank ended before it could write one.
ENDED = ("crashed", "timed_out", "stopped", "missing")


def merge(base: Report, ranks: Sequence[RankReport], timings: tuple[tuple[str, float], ...] = ()) -> Report:
    """``base`` (rank 0's report) with every rank under ``ranks``; its error names each rank that failed."""
    failed = [r for r in ranks if r.status != OK]
    error = "; ".join(f"rank {r.rank} {r.status}: {outcome(r)}" for r in failed)
    return base.replace(ranks=tuple(sorted(ranks, key=lambda r: r.rank)), error=error,
                        timings=tuple(base.timings) + tuple(timings))


def outcome(r: RankReport) -> str:
    """How a rank ended, with the user's line it was at when it crashed, hung or was stopped."""
    cause = r.error.partition(" — ")[0]  # a rank's error keeps its fix; the table shows the cause
    return cause + (f" (in {r.where})" if r.where and r.status in ENDED else "")



def ranks_text(ranks: Sequence[int]) -> str:
    """``rank 1`` / ``ranks 0, 2-5``."""
    spans: list[str] = []
    nums = sorted(ranks)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        spans.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ("rank " if len(nums) == 1 else "ranks ") + ", ".join(spans)
