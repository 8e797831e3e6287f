"""Script mode: a compiled function called again after a matmul precision setting changed (a recompile)."""
import torch


def scale(x):
    return x * 2


compiled = torch.compile(scale, backend="eager")
x = torch.randn(4)
compiled(x)
before = torch.backends.cuda.matmul.allow_tf32
# from torch 2.15 the setting is fp32_precision ("none" at start); writing allow_tf32 back gives "ieee",
# so it is restored by its own name, or later captures in this process see another global state
precision = getattr(torch.backends.cuda.matmul, "fp32_precision", None)
torch.backends.cuda.matmul.allow_tf32 = not before  # recorded in Dynamo's global-state guard
try:
    compiled(x)
finally:
    torch.backends.cuda.matmul.allow_tf32 = before
    if precision is not None:
        torch.backends.cuda.matmul.fp32_precision = precision
