"""Changes the working directory at import and inside forward."""
import os
import tempfile

import torch

os.chdir(tempfile.gettempdir())


def model(x):
    os.chdir("/")
    return torch.cos(x) * 2


example_inputs = (torch.randn(8),)
