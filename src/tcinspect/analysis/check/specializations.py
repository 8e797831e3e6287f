"""`check --max-specializations` and `--static-ok`: gate CI on which dims the code makes constant; the baseline's
record of specialized sources, and a report compared with it. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from tcinspect.analysis.check.outcome import Finding
from tcinspect.report import Report, Specialization


def _counted(rep: Report, static_ok: Sequence[str]) -> list[Specialization]:
    """Specializations of sources not allowed to be static, in order."""
    ok = {s.replace('"', "'") for s in static_ok}
    specs = rep.shapes.specializations if rep.shapes is not None else ()
    return [s for s in specs if not set(s.sources) <= ok]


def check_specializations(model: str, rep: Report, max_specializations: Optional[int],
                          static_ok: Sequence[str]) -> list[Finding]:
    """A fail for each specialization past the budget (``--static-ok`` alone: a budget of 0), else one ok line."""
    if max_specializations is None and not static_ok:
        return []
    limit = max_specializations if max_specializations is not None else 0
    counted = _counted(rep, static_ok)
    if len(counted) <= limit:
        return [Finding(model, "specializations", "ok", f"specializations {len(counted)} <= max {limit}"
                        + (f" ({len(static_ok)} source(s) allowed static)" if static_ok else ""))]
    out = [Finding(model, "specializations", "fail", f"specializations {len(counted)} > max {limit}", rep.target.path)]
    for s in counted:
        loc = s.user_frame
        out.append(Finding(model, "specialization", "fail",
                           f"{', '.join(s.sources)} made a constant ({s.value}, {s.reason}) at "
                           f"{loc.short() if loc else 'a line torch did not name'}"
                           + (f" — `{loc.code}`" if loc and loc.code else ""),
                           loc.file if loc else rep.target.path, loc.line if loc else 0))
    return out


def snapshot_entry(rep: Report) -> dict[str, Any]:
    """The baseline's record of specialized sources; absent for a run with no dynamic-shape event, so the
    baselines of such models stay as they were."""
    if rep.shapes is None:
        return {}
    return {"specialized": sorted({src for s in rep.shapes.specializations for src in s.sources})}


def compare(model: str, rep: Report, base: dict[str, Any]) -> list[Finding]:
    """A source the code now specializes that the baseline did not (fails), or no longer does (improved)."""
    before = {str(s) for s in base.get("specialized", []) or []}
    now: dict[str, Specialization] = {}
    for s in rep.shapes.specializations if rep.shapes else ():
        for src in s.sources:
            now.setdefault(src, s)
    out = []
    for src, s in now.items():
        if src not in before:
            loc = s.user_frame
            out.append(Finding(model, "new specialization", "fail",
                               f"new specialization: {src} made a constant ({s.reason}) at "
                               f"{loc.short() if loc else '?'}", loc.file if loc else rep.target.path,
                               loc.line if loc else 0))
    for src in sorted(before - set(now)):
        out.append(Finding(model, "fixed specialization", "improved", f"{src} is no longer made a constant"))
    return out
