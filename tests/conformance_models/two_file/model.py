"""A model file whose model lives in a package beside it (mypkg/layers.py)."""
import torch

from mypkg import unused  # noqa: F401 - imported, never traced by the compile
from mypkg.layers import Net

torch.manual_seed(0)
model = Net()
example_inputs = (torch.randn(4, 8),)
