"""A pass that changes only the backward graph: in an ATen graph that takes tangents (AOTAutograd's backward), every
aten.cos (sin's derivative) becomes aten.sin. The forward matches eager; the gradients do not."""
import torch
from torch.fx import GraphModule


def cos_to_sin_in_backward(gm: GraphModule) -> GraphModule:
    backward = any(n.op == "placeholder" and n.name.startswith("tangents") for n in gm.graph.nodes)
    if backward:
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target == torch.ops.aten.cos.default:
                node.target = torch.ops.aten.sin.default
        gm.recompile()
    return gm


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        return torch.sin(h).sum()


torch.manual_seed(0)
model = Model()
example_inputs = (torch.randn(4, 16),)
