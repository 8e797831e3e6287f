"""Crashes the interpreter while the model runs (a null-pointer read)."""
import ctypes

import torch


def model(x):
    y = x.sin()
    ctypes.string_at(0)  # segfault
    return y


example_inputs = (torch.randn(4),)
