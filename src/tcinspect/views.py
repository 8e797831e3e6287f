"""Derived views of a report that several commands share (pure; no torch)."""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass
from typing import Any

from tcinspect.report import GraphBreak, Kernel, OutputCode, Report, break_identity


@dataclass(frozen=True)
class DistinctBreak:
    """One distinct graph break: its first event, how often it occurred, and where."""

    first: GraphBreak
    count: int
    compile_ids: tuple[str, ...]


def distinct_breaks(rep: Report) -> tuple[DistinctBreak, ...]:
    """Graph breaks grouped by identity (type + user location), in first-seen order."""
    groups: dict[tuple, list[GraphBreak]] = {}
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
        })
    return {"torch_version": rep.torch_version, "target": rep.target.path or rep.target.model_name,
            "summary": summary, "breaks": rows}


@dataclass(frozen=True)
class FusionSummary:
    """For one Inductor output: ATen ops in the post-grad graph vs kernels launched."""

    compile_id: str
    part: str
    post_grad_ops: int
    kernels: int
    generated_kernels: int
    extern_kernels: int
    extern_ops: tuple[str, ...]  # the library calls (mm, addmm, convolution, ...) the wrapper makes


def fusion_summary(out: OutputCode) -> FusionSummary:
    ops = out.post_grad_graph.op_count if out.post_grad_graph is not None else 0
    externs = [k for k in out.kernels if k.kind == "extern"]
    return FusionSummary(
        compile_id=out.compile_id, part=out.part, post_grad_ops=ops, kernels=len(out.kernels),
        generated_kernels=len(out.kernels) - len(externs), extern_kernels=len(externs),
        extern_ops=tuple(dict.fromkeys(k.name for k in externs)),
    )


def all_kernels(rep: Report) -> list[tuple[OutputCode, Kernel]]:
    """Every kernel of every output, in compile and launch order."""
    return [(o, k) for o in rep.stages.inductor.outputs for k in o.kernels]


def find_kernels(rep: Report, pattern: str) -> list[tuple[OutputCode, Kernel]]:
    """Kernels named ``pattern``: an exact name first, else a glob, else a substring."""
    kernels = all_kernels(rep)
    exact = [(o, k) for o, k in kernels if k.name == pattern]
    if exact:
        return exact
    if any(ch in pattern for ch in "*?["):
        return [(o, k) for o, k in kernels if fnmatch.fnmatchcase(k.name, pattern)]
    return [(o, k) for o, k in kernels if pattern in k.name]


def nearest_kernel_names(rep: Report, pattern: str, n: int = 5) -> list[str]:
    names = list(dict.fromkeys(k.name for _, k in all_kernels(rep)))
    close = difflib.get_close_matches(pattern, names, n=n, cutoff=0.3)
    return close or names[:n]


def codegen_document(rep: Report) -> dict[str, Any]:
    """The `codegen` command's YAML/JSON: per output, its fusion summary and kernels."""
    outputs = []
    for o in rep.stages.inductor.outputs:
        f = fusion_summary(o)
        outputs.append({
            "compile_id": o.compile_id, "aot_id": o.aot_id, "part": o.part, "cache": o.cache,
            "fusion": {"post_grad_ops": f.post_grad_ops, "kernels": f.kernels, "generated_kernels": f.generated_kernels,
                       "extern_kernels": f.extern_kernels, "extern_ops": list(f.extern_ops)},
            "kernels": [{"name": k.name, "kind": k.kind, "language": k.language, "aten_ops": list(k.aten_ops),
                         "source_nodes": list(k.source_nodes), "user_lines": list(k.user_lines), "numel": k.numel,
                         "buffers": list(k.buffers), "launch": k.launch, "source": k.source} for k in o.kernels],
        })
    return {"torch_version": rep.torch_version, "device": rep.device,
            "target": rep.target.path or rep.target.model_name,
            "summary": {"outputs": len(outputs), "kernels": rep.summary.kernels}, "outputs": outputs}
