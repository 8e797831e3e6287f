"""Compiles one graph, then never returns."""
import torch


def model(x):
    y = x.sin()
    torch._dynamo.graph_break()
    while True:
        pass
    return y


example_inputs = (torch.randn(4),)
