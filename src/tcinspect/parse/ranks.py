"""The words for how each rank of a distributed run ended (pure); ``merge`` puts the ranks into one report."""

from __future__ import annotations

from collections.abc import Sequence

from tcinspect.report import RankReport

#: Rank statuses with no result file: the rank ended before it could write one.
ENDED = ("crashed", "timed_out", "stopped", "missing")


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
