"""Graph breaks grouped by identity, and the `breaks` command's YAML/JSON (pure; no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tcinspect.report import GraphBreak, Report, break_identity


@dataclass(frozen=True)
class DistinctBreak:
    """One distinct graph break: its first event, how often it occurred, and where."""

    first: GraphBreak
    count: int
    compile_ids: tuple[str, ...]


def distinct_breaks(rep: Report) -> tuple[DistinctBreak, ...]:
    """Graph breaks grouped by identity (type + user location), in first-seen order."""
    groups: dict[tuple[str, str, int, str], list[GraphBreak]] = {}
    for b in rep.stages.dynamo.graph_breaks:
        groups.setdefault(break_identity(b), []).append(b)
    return tuple(DistinctBreak(items[0], len(items), tuple(dict.fromkeys(b.compile_id for b in items)))
                 for items in groups.values())


def ops_per_graph(rep: Report) -> tuple[int, ...]:
    return tuple(g.graph.op_count for g in rep.stages.dynamo.graphs)


def fullgraph_ok(rep: Report) -> bool:
    """Whether the model compiles with fullgraph=True: one graph per call and no graph break."""
    return not rep.stages.dynamo.graph_breaks and rep.stages.dynamo.status == "ok"


def breaks_document(rep: Report, fullgraph: bool = False) -> dict[str, Any]:
    """The `breaks` command's YAML/JSON: a summary, then each distinct break as separate fields."""
    s = rep.summary
    summary: dict[str, Any] = {
        "graphs": s.graphs,
        "graph_breaks": s.graph_breaks,
        "distinct_graph_breaks": s.distinct_graph_breaks,
        "ops_per_graph": list(ops_per_graph(rep)),
    }
    if s.graphs_failed:
        summary["graphs_failed"] = s.graphs_failed
    if fullgraph:
        summary["compiles_with_fullgraph"] = fullgraph_ok(rep)
    rows = []
    for d in distinct_breaks(rep):
        b, loc = d.first, d.first.user_frame
        rows.append({
            "type": b.break_type,
            "gb_id": b.gb_id,
            "file": loc.file if loc else "",
            "line": loc.line if loc else 0,
            "function": loc.function if loc else "",
            "code": loc.code if loc else "",
            "count": d.count,
            "compile_ids": list(d.compile_ids),
            "reason": b.reason,
            "explanation": b.explanation,
            "hints": list(b.hints),
            "fix": b.fix,
            # a break in another file: the line of the model that led there (None otherwise)
            "model_frame": {"file": b.model_frame.file, "line": b.model_frame.line,
                            "function": b.model_frame.function, "code": b.model_frame.code}
            if b.model_frame else None,
        })
    doc = {"torch_version": rep.torch_version, "target": rep.target.path or rep.target.model_name,
           "summary": summary, "breaks": rows}
    if rep.stages.dynamo.backend_failures:  # their own rows: a frame run eagerly, not a graph break
        doc["backend_failures"] = [
            {"compile_id": f.compile_id, "function": f.function, "file": f.file, "line": f.line, "error": f.error,
             "user_file": f.user_frame.file if f.user_frame else "", "user_line": f.user_frame.line if f.user_frame else 0}
            for f in rep.stages.dynamo.backend_failures]
    return doc
