"""Guards by kind and as the checks they make, and the `guards` command's YAML/JSON (pure; no torch)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tcinspect.analysis.frames import frames, guards_without_graph
from tcinspect.report import Guard, Report

#: TENSOR_MATCH checks several properties at once; the guards view lists each as the tutorials do.
_TENSOR_FIELDS = (
    ("dtype", re.compile(r"\b(torch\.\w+)")),
    ("device", re.compile(r"device=([^,)]+)")),
    ("shape", re.compile(r"size=\[([^\]]*)\]")),
    ("attribute", re.compile(r"requires_grad=(\w+)")),
)


def guard_kinds(guards: Sequence[Guard]) -> list[tuple[str, int]]:
    """Guards by kind (each guard counted once, under ``Guard.kind``), most first: they sum to ``len(guards)``.

    The one count by kind every view shows; ``guard_checks`` splits a TENSOR_MATCH into checks for the
    table rows, which are not guards and are not counted here.
    """
    counts: dict[str, int] = {}
    for g in guards:
        counts[g.kind] = counts.get(g.kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def guard_checks(g: Guard) -> list[tuple[str, str]]:
    """A guard as (kind, check) pairs; a TENSOR_MATCH becomes its dtype, device, shape and requires_grad."""
    if g.guard_type != "TENSOR_MATCH":
        return [(g.kind, g.expression)]
    src = g.source or "tensor"
    out = []
    for kind, pattern in _TENSOR_FIELDS:
        m = pattern.search(g.expression.split(",", 2)[-1] if kind == "dtype" else g.expression)
        if not m:
            continue
        value = m.group(1).strip()
        text = {"dtype": f"{src}.dtype == {value}", "device": f"{src}.device == {value}",
                "shape": f"{src}.size() == [{value}]", "attribute": f"{src}.requires_grad == {value}"}[kind]
        out.append((kind, text))
    return out or [(g.kind, g.expression)]


def _guard_cost_document(rep: Report) -> Any:
    from tcinspect.analysis import guard_cost

    return guard_cost.document(rep)


def guards_document(rep: Report) -> dict[str, Any]:
    """The `guards` command's YAML/JSON: guards per graph by kind, then recompiles."""
    graphs = []
    for g in rep.stages.dynamo.graphs:
        checks = [(kind, text, x) for x in g.guards for kind, text in guard_checks(x)]
        counts: dict[str, int] = {}
        for kind, _, _ in checks:
            counts[kind] = counts.get(kind, 0) + 1
        graphs.append({"compile_id": g.compile_id, "function": g.function, "guards": len(g.guards),
                       "guards_by_kind": dict(guard_kinds(g.guards)),
                       "checks_by_kind": dict(sorted(counts.items())),
                       "checks": [{"kind": k, "check": t, "guard_type": x.guard_type, "source": x.source,
                                   "user_code": x.user_code} for k, t, x in checks]})
    recompiles = [{"compile_id": r.compile_id, "function": r.function, "input_set": r.input_set,
                   "failed_guard": r.reasons[0] if r.reasons else "", "reasons": list(r.reasons),
                   "limit_hit": r.limit_hit, "suggestion": r.suggestion} for r in rep.stages.dynamo.recompiles]
    fr = frames(rep)
    summary = {"calls": rep.calls, "compiles": len(rep.compiles), "recompiles": rep.summary.recompiles,
               "guards": rep.summary.guards, "limit_hit": any(f.limit_hit for f in fr),
               "cache_entries": {f"{f.function} (frame {f.frame})": f.cache_entries for f in fr}}
    without = guards_without_graph(rep)
    if without:
        summary["guards_without_graph"] = without
    return {
        "target": rep.target.path or rep.target.model_name,
        "dynamic": rep.options.dynamic or "auto",
        "summary": summary,
        "graphs": graphs,
        "recompiles": recompiles,
        "input_errors": [{"input_set": e.input_set, "error": e.error} for e in rep.input_errors],
        "guard_cost": _guard_cost_document(rep),
    }
