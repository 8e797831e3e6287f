"""A script (no `model`): it compiles on its own; tcinspect records whatever it compiles."""
import sys

import torch


def f(x, scale):
    return torch.sin(x) * scale + x.cos()


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
compiled = torch.compile(f, backend="aot_eager")
compiled(torch.randn(8), scale)
