"""A plain CPU model that sets no `device`: `--device cuda` on a machine without CUDA is the user's ask."""
import torch

model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4),)
