"""example_inputs is a callable that raises."""
import torch


def model(x):
    return x + 1


def example_inputs():
    return (torch.load("/no/such/checkpoint.pt"),)
