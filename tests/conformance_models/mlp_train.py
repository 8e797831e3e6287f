"""An nn.Sequential MLP in training mode: tcinspect runs its forward and backward."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 10)).train()
example_inputs = (torch.randn(16, 32),)
