"""A small stack of nn.TransformerEncoderLayer blocks built from torch.nn (no downloads).

A realistic kernel mix: pointwise, reductions (layer norm, softmax), matmuls as extern kernels,
and attention.
"""
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
example_inputs = (torch.randn(4, 16, 64),)
