import torch


def model(x):
    y = x.sin()
    print("debug:", y.shape)
    return y.cos()


example_inputs = (torch.randn(8),)
