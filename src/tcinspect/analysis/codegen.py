"""What Inductor made of each graph: ATen ops against kernels, and the `codegen` command's YAML/JSON (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tcinspect.report import OutputCode, Report


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
                         "source_nodes": list(k.source_nodes), "provenance": k.provenance,
                         "dynamo_nodes": list(k.dynamo_nodes), "modules": list(k.modules),
                         "user_lines": list(k.user_lines),
                         "frames": [{"file": f.file, "line": f.line, "function": f.function} for f in k.frames],
                         "numel": k.numel,
                         "buffers": list(k.buffers), "launch": k.launch, "source": k.source} for k in o.kernels],
        })
    return {"torch_version": rep.torch_version, "device": rep.device,
            "target": rep.target.path or rep.target.model_name,
            "summary": {"outputs": len(outputs), "kernels": rep.summary.kernels}, "outputs": outputs}
