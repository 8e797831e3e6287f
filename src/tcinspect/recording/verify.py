"""Golden-model check: eager against compiled on the same inputs, outputs and gradients.

The eager twin is a deep copy of the model, run (forward and backward) before anything is
compiled, so that the compiled run sees the same parameters and buffers; the compiled side is the
capture's own first call. Comparison uses ``torch.testing.assert_close``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from tcinspect.errors import UsageError
from tcinspect.report import Options, TensorCheck, Verification

#: (rtol, atol) by dtype: torch.testing's defaults, loosened where a compiler may legitimately
#: reorder floating-point arithmetic (fused kernels, other reduction orders).
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-7),
}


@dataclass
class Reference:
    """What eager mode computed: named output tensors and named gradients."""

    outputs: list[tuple[str, Any]]
    grads: dict[str, Any]
    structure: str


def tolerance(dtype: Any, options: Options) -> tuple[float, float]:
    name = str(dtype).replace("torch.", "")
    rtol, atol = TOLERANCES.get(name, (0.0, 0.0))  # integers and booleans compare exactly
    return (options.rtol if options.rtol is not None else rtol, options.atol if options.atol is not None else atol)


def _flatten(value: Any, prefix: str = "output") -> list[tuple[str, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if isinstance(value, (list, tuple)):
        return [item for i, v in enumerate(value) for item in _flatten(v, f"{prefix}[{i}]")]
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _flatten(v, f"{prefix}[{k!r}]")]
    return []


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        twin = value.detach().clone()
        return twin.requires_grad_(value.requires_grad) if value.is_leaf else twin
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _grads(model: Any, inputs: tuple) -> dict[str, Any]:
    import torch

    found = {f"grad input[{i}]": t.grad for i, t in enumerate(inputs)
             if isinstance(t, torch.Tensor) and t.grad is not None}
    named = getattr(model, "named_parameters", None)
    if callable(named):
        found.update({f"grad {n}": p.grad for n, p in named() if p.grad is not None})
    return found


def reference(model: Any, inputs: tuple, step: Callable[[Any, tuple], Any], where: Optional[Path]) -> Reference:
    """Run a deep copy of ``model`` eagerly on copies of ``inputs`` (and backward, as the capture will)."""
    try:
        twin = copy.deepcopy(model)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"verify needs a copy of the model, and copy.deepcopy raised {type(exc).__name__}: {exc}",
                         "make the model deep-copyable (no open files or locks as attributes)") from None
    twin_inputs = _clone(inputs)
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            p.grad = None  # the compiled run's gradients must be its own
    try:
        out = step(twin, twin_inputs)
    except Exception as exc:  # noqa: BLE001 - the model's own error
        from tcinspect.recording.engine import _model_raised

        raise _model_raised(exc, where) from exc
    flat = [(n, t.detach()) for n, t in _flatten(out)]
    return Reference(flat, {k: v.detach() for k, v in _grads(twin, twin_inputs).items()}, _shape_of(out))


def _shape_of(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return "T"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_shape_of(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_shape_of(v)}" for k, v in value.items()) + "}"
    return type(value).__name__


def check(name: str, actual: Any, expected: Any, options: Options) -> TensorCheck:
    """One tensor against its eager twin: largest errors and assert_close's verdict."""
    import torch

    rtol, atol = tolerance(expected.dtype, options)
    shape = tuple(int(s) for s in expected.shape)
    dtype = str(expected.dtype).replace("torch.", "")
    a, b = actual.detach().cpu(), expected.detach().cpu()
    if a.shape != b.shape or a.dtype != b.dtype:
        return TensorCheck(name, dtype, shape, 0.0, 0.0, rtol, atol, False,
                           f"compiled gives {str(a.dtype).replace('torch.', '')}{list(a.shape)}, "
                           f"eager {dtype}{list(b.shape)}")
    max_abs = max_rel = 0.0
    if a.numel():
        da, db = a.to(torch.complex128 if a.is_complex() else torch.float64), b.to(
            torch.complex128 if b.is_complex() else torch.float64)
        diff = (da - db).abs()
        max_abs = float(diff.max())
        nonzero = db.abs() > 0
        max_rel = float((diff[nonzero] / db.abs()[nonzero]).max()) if bool(nonzero.any()) else 0.0
    try:
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)
        return TensorCheck(name, dtype, shape, max_abs, max_rel, rtol, atol, True)
    except AssertionError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("Mismatched elements")), lines[0] if lines else "")
        return TensorCheck(name, dtype, shape, max_abs, max_rel, rtol, atol, False, detail)


def compare(ref: Reference, out: Any, inputs: tuple, model: Any, options: Options) -> Verification:
    """Compiled outputs and gradients against the eager reference."""
    flat = _flatten(out)
    if _shape_of(out) != ref.structure:
        return Verification(False, error=f"compiled returned {_shape_of(out)}, eager {ref.structure}")
    checks = [check(name, t, expected, options) for (name, t), (_, expected) in zip(flat, ref.outputs)]
    grads = _grads(model, inputs)
    for name, expected in ref.grads.items():
        if name not in grads:
            checks.append(TensorCheck(name, str(expected.dtype).replace("torch.", ""), tuple(expected.shape),
                                      0.0, 0.0, 0.0, 0.0, False, "eager has a gradient, compiled none"))
        else:
            checks.append(check(name, grads[name], expected, options))
    for name in grads.keys() - ref.grads.keys():
        g = grads[name]
        checks.append(TensorCheck(name, str(g.dtype).replace("torch.", ""), tuple(g.shape), 0.0, 0.0,
                                  0.0, 0.0, False, "compiled has a gradient, eager none"))
    return Verification(all(c.ok for c in checks), tuple(checks))
