"""Compare two reports (before/after a code change or a torch upgrade). Pure: no torch."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tcinspect.analysis import caches
from tcinspect.analysis.breaks import distinct_breaks
from tcinspect.analysis.check.baseline import BreakKey
from tcinspect.report import Report

_COUNTS = ("calls_captured", "fallbacks_to_eager", "graphs", "graph_breaks", "distinct_graph_breaks", "recompiles",
           "guards", "aot_graphs", "kernels")
#: Counts a report saved before coverage was recorded has as -1 (Summary): compared only where both have them
_COVERAGE = ("calls_captured", "fallbacks_to_eager")


@dataclass
class Diff:
    counts: list[tuple[str, int, int]] = field(default_factory=list)  # name, before, after (changed only)
    graphs: list[tuple[str, str, str]] = field(default_factory=list)  # change, graph, detail
    breaks: list[tuple[str, str]] = field(default_factory=list)  # added|removed, description
    recompiles: list[tuple[str, str]] = field(default_factory=list)
    kernels: list[tuple[str, str, str]] = field(default_factory=list)  # added|removed, output, kernel
    #: compile caches: a look-up whose state or key changed, with the key components that changed
    caches: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.counts or self.graphs or self.breaks or self.recompiles or self.kernels or self.caches)


def _graph_key(g: Any) -> str:
    return f"{g.compile_id} {g.function}"


def diff(a: Report, b: Report) -> Diff:
    d = Diff()
    sa, sb = a.summary, b.summary
    d.counts = [(n, getattr(sa, n), getattr(sb, n)) for n in _COUNTS if getattr(sa, n) != getattr(sb, n)
                and not (n in _COVERAGE and min(getattr(sa, n), getattr(sb, n)) < 0)]

    ga = {_graph_key(g): g for g in a.stages.dynamo.graphs}
    gb = {_graph_key(g): g for g in b.stages.dynamo.graphs}
    for k in ga.keys() - gb.keys():
        d.graphs.append(("removed", k, f"{ga[k].graph.op_count} ops"))
    for k in gb.keys() - ga.keys():
        d.graphs.append(("added", k, f"{gb[k].graph.op_count} ops"))
    for k in ga.keys() & gb.keys():
        x, y = ga[k], gb[k]
        changes = []
        if x.graph.op_count != y.graph.op_count:
            changes.append(f"ops {x.graph.op_count} → {y.graph.op_count}")
        if len(x.guards) != len(y.guards):
            changes.append(f"guards {len(x.guards)} → {len(y.guards)}")
        if changes:
            d.graphs.append(("changed", k, ", ".join(changes)))
    d.graphs.sort(key=lambda r: r[1])

    def breaks(rep: Report) -> dict[BreakKey, str]:
        out = {}
        for g in distinct_breaks(rep):
            loc = g.first.user_frame
            out[BreakKey.of(g.first)] = f"{g.first.break_type} at {loc.short() if loc else '?'} in " \
                                        f"{loc.function if loc else '?'}: `{(loc.code if loc else '').strip()}`"
        return out

    ba, bb = breaks(a), breaks(b)
    d.breaks = [("removed", ba[k]) for k in ba.keys() - bb.keys()] + [("added", bb[k]) for k in bb.keys() - ba.keys()]
    d.breaks.sort()

    ra = {r for rc in a.stages.dynamo.recompiles for r in rc.reasons}
    rb = {r for rc in b.stages.dynamo.recompiles for r in rc.reasons}
    d.recompiles = sorted([("removed", r) for r in ra - rb] + [("added", r) for r in rb - ra])

    def kernels(rep: Report) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for o in rep.stages.inductor.outputs:
            out.setdefault(f"{o.compile_id} {o.part}", Counter()).update(k.name for k in o.kernels)
        return out

    ka, kb = kernels(a), kernels(b)
    for out in sorted(ka.keys() | kb.keys()):
        before, after = ka.get(out, Counter()), kb.get(out, Counter())
        for name in sorted((before - after).elements()):
            d.kernels.append(("removed", out, name))
        for name in sorted((after - before).elements()):
            d.kernels.append(("added", out, name))
    d.caches = caches.diff(a, b)
    return d


def document(d: Diff, a_name: str, b_name: str) -> dict[str, Any]:
    return {
        "a": a_name, "b": b_name, "identical": d.empty,
        "counts": {n: {"a": x, "b": y} for n, x, y in d.counts},
        "graphs": [{"change": c, "graph": g, "detail": t} for c, g, t in d.graphs],
        "graph_breaks": [{"change": c, "break": t} for c, t in d.breaks],
        "recompile_reasons": [{"change": c, "reason": t} for c, t in d.recompiles],
        "kernels": [{"change": c, "output": o, "kernel": k} for c, o, k in d.kernels],
        "caches": list(d.caches),
    }
