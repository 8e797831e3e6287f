"""A file that says it needs CUDA (the `device` constant)."""
import torch

device = "cuda"
model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4),)
