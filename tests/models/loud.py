"""Prints megabytes to stdout while compiling and running."""
import torch

print("x" * 1_000_000)


def model(x):
    print("y" * 2_000_000)
    return torch.sin(x) + 1


example_inputs = (torch.randn(8),)
