"""A script (no `model`) that compiles, then raises."""
import torch

f = torch.compile(lambda x: x.sin() + 1, backend="eager")
f(torch.randn(4))
raise KeyError("missing config entry")
