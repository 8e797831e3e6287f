import torch


def model(x):
    scale = x.abs().max().item()
    return x / scale


example_inputs = (torch.randn(8),)
