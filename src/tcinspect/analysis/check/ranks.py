"""`tcinspect check` on a distributed run: ranks that ended differently, and the first compile where they differ. Pure."""

from __future__ import annotations

from tcinspect.analysis.check.outcome import Finding
from tcinspect.analysis.divergence import (
    INFORMATIONAL_ASPECTS,
    TELLING_ASPECTS,
    break_line,
    consequence,
    describe,
    first_compile,
)
from tcinspect.derived.divergence import compile_order
from tcinspect.report import OK, Report


def divergence_findings(model: str, rep: Report) -> list[Finding]:
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
