"""`device` is neither a string nor a torch.device."""
import torch

device = 7
model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4),)
