"""Dynamic shapes at capture time: each call's input shapes, and checking a suggested spec by compiling with it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SpecCheck:
    """The calls compiled again with a suggested spec: how many compiles it took."""

    compiles: int  # frames torch compiled (a counting backend's frame count)
    calls: int
    error: str = ""  # what torch raised, e.g. a constraint violation


def verify_spec(path: str, marks: Sequence[tuple[str, int, int, int]], *, backend: str = "eager",
                model_name: str = "model", inputs_name: str = "example_inputs") -> SpecCheck:
    """Run the model file's calls again, each input marked dynamic as ``marks`` (name, dim, min, max) say,
    under a counting backend; the compile count is what the spec achieves."""
    from tcinspect.capturing import _compat, engine, modelfile

    src = modelfile.read(path, model_name, False)
    with engine._isolated(src.path, None):
        try:
            loaded = modelfile.load(src, model_name, inputs_name)
            calls = [loaded.example_inputs, *loaded.input_sets]
            names = input_names(loaded.model, len(loaded.example_inputs), follow_wrapped=False)
            counter = _compat.compile_counter(backend)
            _compat.reset_dynamo()
            try:
                compiled = _compat.compile_fn(loaded.model, backend=counter)
                for args in calls:
                    for name, dim, low, high in marks:
                        if name in names:
                            _compat.mark_dynamic(args[names.index(name)], dim, low, high)
                    compiled(*args)
            except Exception as exc:  # noqa: BLE001 - the spec's outcome, reported
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                return SpecCheck(_compat.frame_count(counter), len(calls), f"{type(exc).__name__}: {first}")
            finally:
                _compat.reset_dynamo()
            return SpecCheck(_compat.frame_count(counter), len(calls))
        finally:
            modelfile.unload(src)
