"""A stack of N nn.TransformerEncoderLayer blocks built from torch.nn (no downloads), for the benchmark.

Small dimensions, so that a cold CPU compile (forward and backward) stays within tens of seconds on
two cores; N (TCINSPECT_LAYERS, default 4) sets how many FX nodes Dynamo captures.
"""
import os

import torch
from torch import nn

LAYERS = int(os.environ.get("TCINSPECT_LAYERS", "4"))

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers=LAYERS, enable_nested_tensor=False)
example_inputs = (torch.randn(4, 16, 64),)
