"""Whose code an exception came from, and which stage of torch.compile raised it.

Touches torch._dynamo.exc (TorchDynamoException; BackendCompilerFailed and its ``inner_exception``), the files of
torch's stages in a traceback (torch/_dynamo, torch/_functorch, torch/_inductor) and the frame Dynamo's
``fail_on_recompile`` stance raises from: a capture's failure is classified by them (a compiler stage, the user's
model or backend). Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import os
import traceback

import torch


def is_compiler_exception(exc: BaseException) -> bool:
    """Whether an exception came from torch.compile's machinery rather than from user code."""
    from torch._dynamo import exc as dynamo_exc

    return isinstance(exc, dynamo_exc.TorchDynamoException) or type(exc).__module__.startswith(
        ("torch._dynamo", "torch._inductor", "torch._functorch", "torch.fx")
    )


def stage_of_exception(exc: BaseException) -> str:
    """Which stage raised a compiler exception: dynamo, aot_autograd or inductor."""
    from torch._dynamo import exc as dynamo_exc

    if isinstance(exc, dynamo_exc.BackendCompilerFailed):
        # the deepest frame inside torch._functorch (AOTAutograd) or torch._inductor says which
        # stage of the backend raised
        inner = compiler_error_root(exc)
        stage = "inductor"
        for frame in traceback.extract_tb(inner.__traceback__):
            path = frame.filename.replace("\\", "/")
            if "/torch/_inductor/" in path:
                stage = "inductor"
            elif "/torch/_functorch/" in path:
                stage = "aot_autograd"
        return stage
    return "dynamo"


def compiler_error_root(exc: BaseException) -> BaseException:
    """The exception a backend raised, unwrapped from BackendCompilerFailed (``inner_exception``, 2.11-2.15)."""
    inner = getattr(exc, "inner_exception", None)
    return inner if isinstance(inner, BaseException) else exc


def raised_in_torch(exc: BaseException) -> bool:
    """Whether the deepest frame of an exception's traceback is inside the torch package."""
    import traceback as tb

    frames = tb.extract_tb(exc.__traceback__)
    if not frames:
        return True
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    return os.path.abspath(frames[-1].filename).startswith(torch_dir + os.sep)


def refused_to_compile(exc: BaseException) -> bool:
    """Whether ``exc`` is Dynamo refusing a compile under ``torch.compiler.set_stance("fail_on_recompile")``: a plain
    RuntimeError raised by the stance's ``fail_callback`` in torch/_dynamo/eval_frame.py (2.11-2.15)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].name == "fail_callback" and "_dynamo" in frames[-1].filename
