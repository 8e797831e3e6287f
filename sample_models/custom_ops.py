"""An opaque custom op beside a transparent one: what the compiler can see into.

``scaled_tanh`` is a ``torch.library.custom_op`` with a fake implementation: Dynamo and
AOTAutograd keep it as one call, so Inductor cannot fuse across it. ``gelu_tanh`` is a plain
Python function: Dynamo traces into it and Inductor fuses it with its neighbours.

    tcinspect trace sample_models/custom_ops.py --stage aot
    tcinspect export sample_models/custom_ops.py
"""
import torch


@torch.library.custom_op("tcinspect_samples::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


scaled_tanh.register_autograd(_backward, setup_context=_setup)


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3)))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)

    def forward(self, x):
        return gelu_tanh(torch.ops.tcinspect_samples.scaled_tanh(self.fc(x), 2.0))


torch.manual_seed(0)
model = Block()
example_inputs = (torch.randn(8, 32),)
