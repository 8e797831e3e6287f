"""Script mode: a compiled function called again after a matmul precision setting changed (a recompile)."""
import torch


def scale(x):
    return x * 2


compiled = torch.compile(scale, backend="eager")
x = torch.randn(4)
compiled(x)
before = torch.backends.cuda.matmul.allow_tf32
torch.backends.cuda.matmul.allow_tf32 = not before  # recorded in Dynamo's global-state guard
try:
    compiled(x)
finally:
    torch.backends.cuda.matmul.allow_tf32 = before
