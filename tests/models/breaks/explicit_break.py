import torch


def model(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


example_inputs = (torch.randn(8),)
