"""Derived views of the memory section: totals per module and per line, and the document YAML/JSON show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tcinspect.plaindata import plain
from tcinspect.report import GraphMemory, InductorPeak, Memory, Report


@dataclass(frozen=True)
class Share:
    """Saved bytes attributed to one module or one user line."""

    key: str
    bytes: int
    tensors: int
    activation_bytes: int


def _shares(graphs: tuple[GraphMemory, ...], key_of: Any, missing: str) -> list[Share]:
    totals: dict[str, list[int]] = {}
    for g in graphs:
        for t in g.saved:
            key = key_of(t) or missing
            row = totals.setdefault(key, [0, 0, 0])
            row[0] += t.bytes
            row[1] += 1
            row[2] += t.bytes if t.kind == "activation" else 0
    return sorted((Share(k, v[0], v[1], v[2]) for k, v in totals.items()), key=lambda s: (-s.bytes, s.key))


def by_module(mem: Memory) -> list[Share]:
    """Saved bytes per module path (a parameter counts for its own module), largest first."""
    return _shares(mem.graphs, lambda t: t.module, "(no module)")


def by_line(mem: Memory) -> list[Share]:
    """Saved bytes per user line of the node that produced them, largest first (inputs have no line)."""
    return _shares(mem.graphs, lambda t: t.line.rsplit("/", 1)[-1] if t.line else (
        "(graph input)" if t.kind != "activation" else ""), "(no user line)")


def human(n: int) -> str:
    """Bytes for people: 1.5 MiB, 832 B."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def peak_ratio(rep: Report) -> Optional[float]:
    """Compiled over eager step peak (above the step's start), where it was measured."""
    m = rep.memory.measured if rep.memory is not None else None
    return m.peak_ratio if m is not None and m.peak_ratio > 0 else None


#: Inductor's peak estimate of a graph it compiled, where torch made none or made it on another compile
#: (docs/memory.md quotes these). reorder_for_peak_memory estimates only while it schedules, and an FX graph cache
#: hit loads the stored code without scheduling (torch 2.11-2.15 alike).
WARM_NO_ESTIMATE = ("none: this compile was warm (an FX graph cache hit), and a warm compile schedules nothing, "
                    "so Inductor estimated nothing; --fresh compiles it cold")
WARM_KEPT = "from the cold compile of the same code (this compile was warm: a warm compile estimates nothing)"
NOT_LOGGED = ("none: torch logged no estimate for this graph (Inductor's reorder_for_peak_memory did not run, e.g. "
              "turned off in its config or by torch 2.15's mode \"lite\"; a TORCH_TRACE log never holds one)")


@dataclass(frozen=True)
class Estimate:
    """Inductor's peak estimate for one output code of a graph, or why there is none."""

    part: str  # forward | backward
    aot_id: str
    peak: Optional[InductorPeak]
    note: str = ""  # WARM_NO_ESTIMATE, WARM_KEPT, NOT_LOGGED or ""


def estimates(rep: Report, g: GraphMemory) -> list[Estimate]:
    """Each Inductor output code of ``g``'s compile with its estimate, and a note where the compile was warm or
    torch estimated nothing; estimates with no output code in the report are listed as they are."""
    mem = rep.memory
    if mem is not None and next((x for x in mem.graphs if x.compile_id == g.compile_id), g) is not g:
        return []  # several forwards under one compile id (DDPOptimizer's): the first one shows its estimates
    by_id = {p.aot_id: p for p in g.inductor_peaks}
    out = []
    for o in rep.stages.inductor.outputs:
        if o.compile_id != g.compile_id or o.part not in ("forward", "backward"):
            continue
        peak = by_id.pop(o.aot_id, None)
        warm = o.cache == "hit"
        note = (WARM_KEPT if warm else "") if peak is not None else (WARM_NO_ESTIMATE if warm else NOT_LOGGED)
        out.append(Estimate(o.part, o.aot_id, peak, note))
    return out + [Estimate(p.part, p.aot_id, p) for p in by_id.values()]


def estimate_line(e: Estimate) -> str:
    """``Inductor's peak estimate, forward (0_forward): 371.8 KiB  [baseline 371.8 KiB, …]`` and its note."""
    head = f"Inductor's peak estimate, {e.part} ({e.aot_id}): "
    if e.peak is None:
        return head + e.note
    methods = ", ".join(f"{m} {human(b)}" for m, b in e.peak.methods)
    return head + f"{human(e.peak.chosen)}  [{methods}]" + (f"  {e.note}" if e.note else "")


def document(rep: Report) -> dict[str, Any]:
    """``tcinspect memory --format yaml/json``: the section with its totals and shares."""
    mem = rep.memory
    if mem is None:
        return {"memory": None, "why": "no AOT graph has a backward graph: nothing is saved for backward"}
    graphs = []
    for g in mem.graphs:
        d = plain(g)
        d = {"compile_id": g.compile_id, "saved_bytes": g.saved_bytes, "saved_bytes_expr": g.saved_bytes_expr,
             "parameter_bytes": g.bytes_of("parameter"), "input_bytes": g.bytes_of("input"),
             "activation_bytes": g.bytes_of("activation"), **{k: v for k, v in d.items() if k != "compile_id"}}
        d["inductor_estimates"] = [{"part": e.part, "aot_id": e.aot_id, "bytes": e.peak.chosen if e.peak else None,
                                    "note": e.note} for e in estimates(rep, g)]
        graphs.append(d)
    return {"saved_bytes": mem.saved_bytes, "graphs": graphs,
            "by_module": [plain(s) for s in by_module(mem)], "by_line": [plain(s) for s in by_line(mem)],
            "measured": plain(mem.measured), "peak_ratio": peak_ratio(rep), "not_measured": mem.not_measured}
