"""Dynamic shapes at capture time: each call's input shapes, and checking a suggested spec by compiling with it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any


def input_names(model: Callable[..., Any], count: int) -> list[str]:
    """The parameter names of the model's first ``count`` positional arguments, as Dynamo names them
    (``L['input_ids']``); ``arg{i}`` where the signature does not say."""
    fn = getattr(model, "forward", model)
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(count):
        if i < len(params) and params[i].kind != params[i].VAR_POSITIONAL:
            names.append(params[i].name)
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            names.append(f"{params[-1].name}[{i - len(params) + 1}]")
        else:
            names.append(f"arg{i}")
    return names


def call_shapes(model: Callable[..., Any], inputs: Sequence[Any]) -> list[dict[str, Any]]:
    """``[{"name", "shape"}]`` for each tensor among a call's positional inputs."""
    import torch

    names = input_names(model, len(inputs))
    return [{"name": name, "shape": list(value.shape)} for name, value in zip(names, inputs)
            if isinstance(value, torch.Tensor)]
