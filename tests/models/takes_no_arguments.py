"""A model file (it defines `model`): an extra positional argument after it is a mistake, not script input."""
import torch

model = torch.nn.ReLU()
example_inputs = (torch.randn(4),)
