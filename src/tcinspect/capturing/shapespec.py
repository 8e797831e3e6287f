"""Dynamic shapes at capture time: each call's tensor input shapes, named as Dynamo names them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any


def input_names(model: Callable[..., Any], count: int, follow_wrapped: bool = True) -> list[str]:
    """The parameter names of the model's first ``count`` positional arguments; ``arg{i}`` where the
    signature does not say. Dynamo names the arguments of the function it compiles, which is the
    wrapper where a decorator wraps ``forward`` (``follow_wrapped=False``: ``args[0]`` for ``*args``)."""
    fn = getattr(model, "forward", model)
    try:
        params = [p for p in inspect.signature(fn, follow_wrapped=follow_wrapped).parameters.values()
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
    """``[{"name", "label", "shape"}]`` for each tensor among a call's positional inputs: ``name`` as Dynamo's
    source names it, ``label`` the parameter's own name."""
    import torch

    names = input_names(model, len(inputs), follow_wrapped=False)
    labels = input_names(model, len(inputs))
    return [{"name": name, "label": label, "shape": list(value.shape)}
            for name, label, value in zip(names, labels, inputs) if isinstance(value, torch.Tensor)]

