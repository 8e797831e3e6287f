"""A tiny model called with a positional and a keyword argument (verify, export)."""
import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x, scale=None, bias=0.0):
        y = self.linear(x)
        return y * scale + bias if scale is not None else y


torch.manual_seed(0)
model = Scaled()
example_inputs = (torch.randn(4, 8),)


def example_kwargs():
    return {"scale": torch.randn(4, 4, requires_grad=True), "bias": 1.0}


input_sets = [((torch.randn(4, 8),), {"scale": torch.randn(4, 4)}), {"x": torch.randn(4, 8), "scale": torch.randn(4, 4)}]
