"""Exports fine; the process that packages it with AOTInductor dies (as a native crash would)."""
import os
import sys

import torch

if sys.argv and sys.argv[0].endswith("export.py"):  # the AOTInductor child process
    os.abort()

model = torch.nn.Linear(4, 2)
example_inputs = (torch.randn(3, 4),)
