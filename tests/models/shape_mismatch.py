"""The input does not fit the layer: eager mode raises too, so this is the model's error."""
import torch

model = torch.nn.Linear(16, 4)
example_inputs = (torch.randn(2, 8),)
