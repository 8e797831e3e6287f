"""Aborts the interpreter while the model runs (as a failed assertion in a C++ extension does)."""
import os

import torch


def model(x):
    y = x.cos()
    os.abort()
    return y


example_inputs = (torch.randn(4),)
