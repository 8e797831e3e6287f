"""A model's output as a tree: its tensor leaves by name, its structure, and the loss backward runs on.

Outputs may be tensors, tuples, lists, dicts and other mappings (Hugging Face's ``ModelOutput`` is
an ``OrderedDict``), dataclasses, or any nesting of them; anything else is not a tensor leaf.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


def named_tensors(value: Any, prefix: str = "output") -> list[tuple[str, Any]]:
    """Every tensor leaf of ``value`` with its path, e.g. ``output['logits']``, ``output[0].hidden``."""
    import torch

    out: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def walk(v: Any, name: str) -> None:
        if isinstance(v, torch.Tensor):
            out.append((name, v))
            return
        if id(v) in seen:  # a container that holds itself
            return
        if isinstance(v, Mapping):  # before dataclasses: ModelOutput is both, and its mapping skips None fields
            seen.add(id(v))
            for k, x in v.items():
                walk(x, f"{name}[{k!r}]")
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            seen.add(id(v))
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name), f"{name}.{f.name}")
        elif isinstance(v, (list, tuple)):
            seen.add(id(v))
            for i, x in enumerate(v):
                walk(x, f"{name}[{i}]")

    walk(value, prefix)
    return out


def structure(value: Any) -> str:
    """The output's shape as a tree, tensors as ``T`` (two runs of one model give the same text)."""
    import torch

    if isinstance(value, torch.Tensor):
        return "T"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{structure(v)}" for k, v in value.items()) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__ + "(" + ",".join(
            f"{f.name}:{structure(getattr(value, f.name))}" for f in dataclasses.fields(value)) + ")"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(structure(v) for v in value) + ")"
    return type(value).__name__


def scalar_loss(out: Any) -> Any:
    """What backward runs on: the sum over every floating (or complex) tensor leaf that requires grad,
    each summed in float32 (a complex leaf by its real part); None if no leaf requires grad."""
    found = [t for _, t in named_tensors(out)
             if t.requires_grad and (t.is_floating_point() or t.is_complex())]
    if not found:
        return None
    return sum(t.real.float().sum() if t.is_complex() else t.float().sum() for t in found)
