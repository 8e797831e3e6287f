"""A model torch.export handles differently in strict and non-strict mode (runs on a CPU).

Strict export traces with TorchDynamo, which refuses the explicit graph break; non-strict export
runs the Python code itself, where ``graph_break()`` is a no-op. With ``--dynamic-dim 0`` the
batch dimension becomes a symbol (``s77``) in the exported graph.

    tcinspect export sample_models/export_cases.py --dynamic-dim 0
"""
import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 4)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        h = torch.relu(self.proj(x))
        torch._dynamo.graph_break()  # e.g. a logging call in real code
        return h * self.scale


torch.manual_seed(0)
model = Head()
example_inputs = (torch.randn(8, 16),)
