"""A graph break inside a loop: Dynamo cannot resume there and runs the frame eagerly."""
import torch


def model(x):
    for _ in range(3):
        x = x + 1
        torch._dynamo.graph_break()
    return x


example_inputs = (torch.randn(4),)
