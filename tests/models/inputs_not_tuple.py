import torch

model = torch.nn.Linear(2, 2)
example_inputs = torch.randn(1, 2)
