"""The seed pipeline walkthrough: F.gelu(x @ W + b), decomposed by AOTAutograd and fused by Inductor."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
W = torch.randn(64, 32, requires_grad=True)
b = torch.randn(32, requires_grad=True)


def model(x):
    return F.gelu(x @ W + b)


example_inputs = (torch.randn(16, 64),)
