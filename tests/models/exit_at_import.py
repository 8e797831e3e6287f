"""Calls sys.exit() while being imported (script code not under a __main__ guard)."""
import sys

import torch

model = torch.nn.Linear(4, 4)
example_inputs = (torch.randn(2, 4),)
sys.exit(3)
