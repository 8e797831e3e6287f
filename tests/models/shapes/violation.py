"""mark_dynamic on a length that a Python loop makes a constant: torch raises a constraint violation."""
import torch


def model(x):
    out = x
    for i in range(0, x.shape[1], 8):
        out = out + x[:, i:i + 8].sum()
    return out


example_inputs = (torch.randn(2, 16),)
torch._dynamo.mark_dynamic(example_inputs[0], 1)
