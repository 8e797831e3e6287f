import torch


def model(x):
    parts = [x.sin(), x.cos(), x.tan()]
    ordered = sorted(parts, key=lambda t: t.sum())
    return ordered[0] + 1


example_inputs = (torch.randn(8),)
