"""input_sets is a dict, not a list of tuples."""
import torch

model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4),)
input_sets = {"small": (torch.randn(1, 4),)}
