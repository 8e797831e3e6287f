"""Dynamo and AOTAutograd succeed; the backend compiler behind them fails."""
import torch
from torch._dynamo import register_backend
from torch._dynamo.backends.common import aot_autograd


def _failing_compiler(gm, example_inputs):
    raise RuntimeError("lowering failed on purpose")


try:
    register_backend(name="tcinspect_failing", compiler_fn=aot_autograd(fw_compiler=_failing_compiler))
except Exception:  # already registered in this process
    pass


def model(x):
    return torch.relu(x) + 1


example_inputs = (torch.randn(4),)
