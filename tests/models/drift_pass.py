"""A pass that changes the math a little: every multiplication by a constant is 0.1 % larger."""
import torch
from torch.fx import GraphModule


def scale_drift(gm: GraphModule) -> GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.mul.Tensor and isinstance(node.args[1], float):
            node.args = (node.args[0], node.args[1] * 1.001)
    gm.recompile()
    return gm
