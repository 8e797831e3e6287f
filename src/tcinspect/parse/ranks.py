"""What a failed rank means for the whole run of a distributed job (``Report.failure``; pure). The ranks are
merged into one report by ``parse.merge``."""

from __future__ import annotations

from typing import Optional

from tcinspect.report import OK, Failure, Report
from tcinspect.vocabulary import ENDED, outcome


def rank_failure(rep: Report, timeout: Optional[float] = None) -> Optional[Failure]:
    """What a failed rank means for the whole run (crashed: exit 4, rank_error: 2, stage: 3); None if none failed."""
    bad = [r for r in rep.ranks if r.status != OK]
    if not bad:
        return None
    n = len(rep.ranks)
    # a rank that torchrun stopped is a consequence of another's failure, not a cause
    causes = [r for r in bad if r.status != "stopped"] or bad
    first = causes[0]
    also = [r for r in bad if r is not first]
    tail = f"; {', '.join(f'rank {r.rank} {r.status}' for r in also)}" if also else ""
    if timeout is not None:
        running = ", ".join(f"rank {r.rank}" + (f" in {r.where}" if r.where else "") for r in bad
                            if r.status == "timed_out")
        return Failure("crashed", f"the torchrun job ran past --timeout {timeout:g} s and was stopped "
                                  f"({running or 'no rank was running'})",
                       "look for a hang, or a collective one rank never reaches (the table shows where "
                       "each rank was), or raise --timeout")
    if any(r.status in ENDED for r in causes):
        return Failure("crashed", f"rank {first.rank} of {n} {first.status}: {outcome(first)}{tail}",
                       "each rank's stages recorded before it ended are shown, and its own output above ([rank N] lines)")
    if any(r.status == "error" for r in causes):
        first = next(r for r in causes if r.status == "error")
        cause, _, fix = first.error.partition(" — ")
        return Failure("rank_error", f"rank {first.rank} of {n}: {cause}{tail}", fix)
    return Failure("stage", f"rank {first.rank} of {n}: {first.error}{tail}",
                   "the report shows the stages that worked on each rank; --debug for details")
