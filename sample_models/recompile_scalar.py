"""The seed tutorial's guard example: f(x, multiplier) recompiles when the Python scalar changes."""
import torch


def model(x, multiplier):
    return x * multiplier


example_inputs = (torch.randn(4), 2.0)
input_sets = [
    (torch.randn(4), 2.0),  # same guards: the cached graph is reused
    (torch.randn(4), 3.0),  # multiplier changed: the guard L['multiplier'] == 2.0 fails, recompile
]
