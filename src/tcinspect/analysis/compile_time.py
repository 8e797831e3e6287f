"""Derived views of a report's compile time (pure; no torch): slowest compiles and phases, the caches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tcinspect.analysis import caches
from tcinspect.report import CompileTime, CompileTiming, Phase, Report
from tcinspect.vocabulary import BACKWARD_ROOT, FORWARD_ROOT, GROUP_TITLES, GROUPS, breakdown

#: Rows in the "slowest" lists.
TOP = 10


def compile_time_of(rep: Report) -> CompileTime:
    """The report's compile-time section; for a report written without one, its compiles' totals only."""
    if rep.compile_time is not None:
        return rep.compile_time
    return CompileTime(compiles=tuple(
        CompileTiming(compile_id=c.compile_id, part="forward", function=c.function,
                      total_s=c.entire_frame_compile_time_s, inductor_s=c.inductor_compile_time_s)
        for c in rep.compiles))


def slowest(ct: CompileTime, n: int = TOP) -> list[CompileTiming]:
    return sorted((t for t in ct.compiles if t.part != "runtime"), key=lambda t: -t.total_s)[:n]


@dataclass(frozen=True)
class PhaseTotal:
    """One span name's exclusive time summed over every compile."""

    name: str
    group: str
    seconds: float
    count: int


def slowest_phases(ct: CompileTime, n: int = TOP) -> list[PhaseTotal]:
    """Span names by exclusive time over the whole run (gaps in a root span count as "other")."""
    acc: dict[str, list[Any]] = {}  # name -> [group, seconds, count]

    def walk(p: Phase, root: bool) -> None:
        gap = root and p.name in (FORWARD_ROOT, BACKWARD_ROOT)
        name = "other" if gap else p.name
        entry = acc.setdefault(name, ["other" if gap else p.group, 0.0, 0])
        entry[1] += p.self_s
        entry[2] += 1
        for c in p.children:
            walk(c, False)

    for t in ct.compiles:
        if t.root is not None and t.part != "runtime":
            walk(t.root, True)
    rows = [PhaseTotal(k, g, round(s, 6), c) for k, (g, s, c) in acc.items()]
    return sorted(rows, key=lambda r: -r.seconds)[:n]


def groups(t: CompileTiming) -> dict[str, float]:
    """Exclusive seconds by phase group, in pipeline order, adding up to the compile's measured total.

    The tree adds up to its root span; the root span and torch's total agree to the microsecond in
    torch 2.13 (both time entire_frame_compile / entire_backward_compile), and any difference is "other".
    """
    if t.root is None:
        return {"other": t.total_s} if t.total_s else {}
    out = breakdown(t.root)
    gap = t.total_s - t.root.seconds
    if gap > 0:
        out["other"] = round(out.get("other", 0.0) + gap, 6)
    return {g: out[g] for g in GROUPS if g in out}


def run_groups(ct: CompileTime, runtime: bool = False) -> dict[str, float]:
    """Exclusive seconds by phase group over the compiles (``runtime``: over the spans after them)."""
    total: dict[str, float] = {}
    for t in ct.compiles:
        if (t.part == "runtime") != runtime:
            continue
        for g, s in groups(t).items():
            total[g] = total.get(g, 0.0) + s
    return {g: round(total[g], 6) for g in GROUPS if g in total}


def cache_counts(ct: CompileTime) -> dict[str, dict[str, int]]:
    """hit / miss / bypass counts of the FX graph cache and the AOTAutograd cache."""
    out: dict[str, dict[str, int]] = {"fx_graph": {}, "aot_autograd": {}}
    for t in ct.compiles:
        for c in t.caches:
            out.setdefault(c.cache, {})
            out[c.cache][c.state] = out[c.cache].get(c.state, 0) + 1
    return out


def document(rep: Report) -> dict[str, Any]:
    """The ``compile-time`` command's YAML/JSON: totals, slowest compiles and phases, caches, findings."""
    ct = compile_time_of(rep)
    forward = sum(t.total_s for t in ct.compiles if t.part == "forward")
    backward = sum(t.total_s for t in ct.compiles if t.part == "backward")
    compiles = []
    for t in slowest(ct, len(ct.compiles)):
        compiles.append({
            "compile_id": t.compile_id, "part": t.part, "function": t.function, "total_s": t.total_s,
            "phases_s": groups(t),
            "caches": [{"cache": c.cache, "part": c.part, "state": c.state, "reason": c.reason,
                        "saved_s": c.saved_s, "key": c.key, "changed": list(c.changed)} for c in t.caches],
            "restarts": list(t.restarts),
        })
    return {
        "torch_version": rep.torch_version,
        "target": rep.target.path or rep.target.model_name,
        "total_s": round(forward + backward, 6),
        "forward_s": round(forward, 6),
        "backward_s": round(backward, 6),
        "phases_s": run_groups(ct),
        # timed after the compile, at the first calls (e.g. Triton autotuning): not in total_s
        "runtime_s": round(sum(t.total_s for t in ct.compiles if t.part == "runtime"), 6),
        "runtime_phases_s": run_groups(ct, runtime=True),
        "phase_titles": {g: GROUP_TITLES[g] for g in run_groups(ct)},
        "compiles": compiles,
        "slowest_phases": [{"name": p.name, "group": p.group, "seconds": p.seconds, "count": p.count}
                           for p in slowest_phases(ct)],
        "caches": cache_counts(ct),
        "compile_threads": ct.compile_threads,
        "findings": [{"kind": f.kind, "compile_id": f.compile_id, "seconds": f.seconds, "message": f.message,
                      "fix": f.fix} for f in ct.findings],
        "phase_tree": rep.compile_time is not None,
        "unmatched_spans": ct.unmatched_spans,
        # every look-up: state, torch's reason, the key components changed since the last recorded run
        "cache_lookups": caches.document(rep),
        "warm_start_saves_s": caches.warm_start_saves(rep),
    }
