import torch


def model(x):
    return torch.where(x.sum() > 0, x * 2, x).relu()


example_inputs = (torch.randn(8),)
