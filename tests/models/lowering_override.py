"""A model file whose own Inductor lowering is wrong: it registers a "fast tanh" lowering for aten.tanh that
computes x / (1 + |x|) instead (close only near 0). Eager, aot_eager and aot_eager_decomp_partition run torch's tanh;
only Inductor runs the lowering. ``verify`` fails; no graph node departs (the node is aten.tanh in every graph),
the first failing stage is inductor, and torch's CompilerBisector names the lowering of that node.

    tcinspect verify tests/models/lowering_override.py
"""
import torch
from torch._inductor import lowering
from torch._inductor.virtualized import ops

aten = torch.ops.aten


def _approx(v):
    # the user's "fast tanh": x / (1 + |x|), close to tanh near 0 only
    return ops.truediv(v, ops.add(ops.constant(1.0, torch.float32), ops.abs(v)))


fast_tanh = lowering.make_pointwise(_approx)
lowering.lowerings[aten.tanh.default] = fast_tanh
lowering.lowerings[aten.tanh] = fast_tanh


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.linear(x)
        return torch.tanh(h) * 2 + x


model = Gate()
example_inputs = (torch.randn(8, 16) * 3,)
