"""Runs eagerly and with a plain torch.compile; fails only under Dynamo's fullgraph=True."""
import torch


def model(x):
    y = torch.relu(x)
    print("between the halves")  # a graph break
    return y * 2


example_inputs = (torch.randn(8),)
