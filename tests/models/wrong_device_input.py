"""The module is on the CPU, its input on the meta device: eager mode already fails."""
import torch

model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4, device="meta"),)
