"""Calls torch._dynamo.reset() itself, at import and inside forward."""
import torch

torch._dynamo.reset()


def model(x):
    y = torch.tanh(x)
    torch._dynamo.reset()
    return y + 1


example_inputs = (torch.randn(8),)
