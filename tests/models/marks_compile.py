"""A small Inductor model that touches $TCINSPECT_TEST_MARK when its compile is about to start."""
import os
from pathlib import Path

import torch

model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()) for _ in range(6)])


def example_inputs():
    mark = os.environ.get("TCINSPECT_TEST_MARK")
    if mark:
        Path(mark).write_text("compiling\n")
    return (torch.randn(8, 32),)
