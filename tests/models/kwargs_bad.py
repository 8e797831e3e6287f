"""`example_kwargs` that is not a dict: one line, exit 2."""
import torch

model = torch.nn.Linear(4, 2)
example_kwargs = [("input", torch.randn(2, 4))]
