"""Write a large synthetic report (N FX nodes, kernels and graph breaks) for the read-speed rows.

It is built with tcinspect's own report classes, so it is a valid report of the current schema;
its content is made up (the point is its size: what `breaks` or `codegen --kernel` must load).

``bench/synthetic.py N FILE`` writes one (the tests build theirs in memory):

    python bench/synthetic.py 10000 /tmp/big.json
"""

from __future__ import annotations

from tcinspect.report import (
    AotGraphs,
    AotStage,
    DynamoGraph,
    DynamoStage,
    Graph,
    GraphBreak,
    Guard,
    InductorStage,
    Kernel,
    Node,
    OutputCode,
    Report,
    SourceLocation,
    Stages,
    Target,
)


def build(nodes: int, graphs: int = 10) -> Report:
    per = nodes // graphs
    dyn, aot, outs, breaks = [], [], [], []
    for g in range(graphs):
        cid = f"{g}/0"
        src = [SourceLocation("/src/model.py", 10 + i % 500, "forward", f"x = x * {i}") for i in range(per)]
        ns = tuple(Node("call_function", f"mul_{i}", "aten.mul.Tensor", f"mul_{i - 1}, {i}", "f32", ("64", "64"),
                        ("64", "1"), "cpu", src[i]) for i in range(per))
        code = "\n".join(f'        mul_{i}: "f32[64, 64][64, 1]cpu" = torch.ops.aten.mul.Tensor(mul_{i - 1}, {i})'
                         for i in range(per))
        graph = Graph("dynamo_output_graph", code, ns)
        guards = tuple(Guard("tensor", "TENSOR_MATCH", f"L['x{i}']", f"check_tensor(L['x{i}'], Tensor, torch.float32)")
                       for i in range(20))
        dyn.append(DynamoGraph(cid, "forward", "/src/model.py", 1, graph, guards))
        aot.append(AotGraphs(cid, forward=Graph("aot_forward_graph", code, ns)))
        kernels = tuple(Kernel(f"cpp_fused_mul_{g}_{k}", "cpp", "cpp", (f"mul_{k}",), ("aten.mul",),
                               ("/src/model.py:10",), f"cpp_fused_mul_{g}_{k}(buf0)", "", ("buf0: f32[64, 64]",),
                               "extern \"C\" void kernel(float* p) {\n" + "    p[0] *= 2;\n" * 40 + "}\n")
                        for k in range(per // 10))
        outs.append(OutputCode(cid, f"{g}_forward", "forward", code, kernels, graph, "miss"))
        if g:
            breaks.append(GraphBreak(cid, SourceLocation("/src/model.py", 100 + g, "forward", "print(x)"),
                                     "Failed to trace builtin operator", "GB0059", "", "print", ("remove it",)))
    return Report(torch_version="synthetic", device="cpu", target=Target(kind="model", path="synthetic.py"),
                  stages=Stages(DynamoStage("ok", "", tuple(dyn), tuple(breaks)), AotStage("ok", "", tuple(aot)),
                                InductorStage("ok", "", tuple(outs))), calls=1)

