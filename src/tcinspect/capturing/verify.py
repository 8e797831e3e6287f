"""Golden-model check: eager against compiled on the same inputs, outputs and gradients.

The eager twin is a deep copy of the model, run (forward and backward) before anything is
compiled, so that the compiled run sees the same parameters and buffers; the compiled side is the
capture's own first call. A tensor passes when ``torch.testing.assert_close`` accepts it; one that
does not is judged against numerical noise, by the rule PyTorch's own benchmark accuracy checks use
(``torch._dynamo.utils.same`` with an fp64 reference): a float64 twin of the eager run is the truth,
and the compiled result passes when its RMSE from that truth is at most ``noise_multiplier`` times
eager's own RMSE plus ``rtol / 10``. So float32 rounding (a fused kernel summing in another order)
passes, and a change to the math fails.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing import outputs
from tcinspect.capturing.modelfile import Call
from tcinspect.errors import UsageError
from tcinspect.report import TensorCheck, Verification, VerifyRequest

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
    """What eager mode computed: named output tensors and named gradients, and their float64 twins."""

    outputs: list[tuple[str, Any]]
    grads: dict[str, Any]
    structure: str
    #: the same run in float64 (model and floating inputs cast), by tensor name; empty where it could not run
    fp64: dict[str, Any] = field(default_factory=dict)


def tolerance(dtype: Any, request: VerifyRequest) -> tuple[float, float]:
    name = str(dtype).replace("torch.", "")
    rtol, atol = TOLERANCES.get(name, (0.0, 0.0))  # integers and booleans compare exactly
    return (request.rtol if request.rtol is not None else rtol, request.atol if request.atol is not None else atol)


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, Call):
        return Call(_clone(value.args), _clone(value.kwargs))
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


def _grads(model: Any, inputs: Call) -> dict[str, Any]:
    import torch

    found = {f"grad {name}": t.grad for name, t in inputs.named()
             if isinstance(t, torch.Tensor) and t.grad is not None}
    named = getattr(model, "named_parameters", None)
    if callable(named):
        found.update({f"grad {n}": p.grad for n, p in named() if p.grad is not None})
    return found


def reference(model: Any, inputs: Call, step: Callable[[Any, Call], Any], where: Optional[Path]) -> Reference:
    """Run a deep copy of ``model`` eagerly on copies of ``inputs`` (and backward, as the capture will),
    then, where it runs, a float64 copy of both."""
    twin = _copy(model)
    twin_inputs = _clone(inputs)
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            p.grad = None  # the compiled run's gradients must be its own
    try:
        out = step(twin, twin_inputs)
    except Exception as exc:  # the model's own error
        from tcinspect.capturing.modelfile import model_raised

        raise model_raised(exc, where) from exc
    flat = [(n, t.detach()) for n, t in outputs.named_tensors(out)]
    grads = {k: v.detach() for k, v in _grads(twin, twin_inputs).items()}
    return Reference(flat, grads, outputs.structure(out), _float64_run(model, inputs, step))


def _copy(model: Any) -> Any:
    try:
        return copy.deepcopy(model)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"verify needs a copy of the model, and copy.deepcopy raised {type(exc).__name__}: {exc}",
                         "make the model deep-copyable (no open files or locks as attributes)") from None


def _widen(value: Any) -> Any:
    """A float64 copy of every floating tensor in ``value`` (leaves keep requires_grad)."""
    import torch

    if isinstance(value, Call):
        return Call(_widen(value.args), _widen(value.kwargs))
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            return value.detach().clone()
        twin = value.detach().to(torch.float64)
        return twin.requires_grad_(value.requires_grad) if value.is_leaf else twin
    if type(value) in (tuple, list):
        return type(value)(_widen(v) for v in value)
    if isinstance(value, dict):
        return {k: _widen(v) for k, v in value.items()}
    return value


def _float64_run(model: Any, inputs: Call, step: Callable[[Any, Call], Any]) -> dict[str, Any]:
    """Outputs and gradients of the model run in float64, by name; empty where float64 cannot run
    (an op without a float64 kernel, a user kernel written for float32)."""
    try:
        twin = copy.deepcopy(model)
        if callable(getattr(twin, "double", None)):
            twin = twin.double()
        wide_inputs = _widen(inputs)
        out = step(twin, wide_inputs)
    except Exception:  # noqa: BLE001 - no float64 truth: the dtype tolerances alone decide
        return {}
    found = {n: t.detach() for n, t in outputs.named_tensors(out)}
    found.update({k: v.detach() for k, v in _grads(twin, wide_inputs).items()})
    return found


def _rmse(a: Any, truth: Any) -> float:
    import torch

    kind = torch.complex128 if a.is_complex() else torch.float64
    return float(((a.to(kind) - truth.to(kind)).abs() ** 2).mean().sqrt()) if a.numel() else 0.0


def noise_multiplier(dtype: Any, numel: int) -> float:
    """How far beyond eager's own rounding error the compiled result may be (PyTorch's benchmark rule:
    2; 3 for float16 and bfloat16 and for tensors under 1,000 elements, where noise dominates)."""
    return 3.0 if str(dtype).endswith(("float16", "bfloat16")) or numel < 1000 else 2.0


def check(name: str, actual: Any, expected: Any, request: VerifyRequest, truth: Any = None) -> TensorCheck:
    """One tensor against its eager twin: largest errors and the verdict (``truth``: its float64 twin)."""
    import torch

    rtol, atol = tolerance(expected.dtype, request)
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
    # tolerances the user gave (--rtol/--atol) decide alone
    usable = (truth is not None and request.rtol is None and request.atol is None
              and (a.is_floating_point() or a.is_complex()) and tuple(truth.shape) == tuple(a.shape))
    if not usable:
        return TensorCheck(name, dtype, shape, max_abs, max_rel, rtol, atol, False, detail)
    truth = truth.detach().cpu()
    compiled_err, eager_err = _rmse(a, truth), _rmse(b, truth)
    multiplier = noise_multiplier(a.dtype, a.numel())
    ok = compiled_err <= multiplier * eager_err + rtol / 10
    why = (f"RMSE from float64 eager: compiled {compiled_err:.3g}, eager {eager_err:.3g} "
           f"(allowed {multiplier:g} x eager + {rtol / 10:g})")
    return TensorCheck(name, dtype, shape, max_abs, max_rel, rtol, atol, ok, "" if ok else f"{detail}; {why}",
                       fp64_rmse=compiled_err, eager_fp64_rmse=eager_err)


def compare(ref: Reference, out: Any, inputs: Call, model: Any, request: VerifyRequest) -> Verification:
    """Compiled outputs and gradients against the eager reference (and its float64 twin)."""
    flat = outputs.named_tensors(out)
    if outputs.structure(out) != ref.structure:
        return Verification(False, error=f"compiled returned {outputs.structure(out)}, eager {ref.structure}")
    checks = [check(name, t, expected, request, ref.fp64.get(name))
              for (name, t), (_, expected) in zip(flat, ref.outputs)]
    grads = _grads(model, inputs)
    for name, expected in ref.grads.items():
        if name not in grads:
            checks.append(TensorCheck(name, str(expected.dtype).replace("torch.", ""), tuple(expected.shape),
                                      0.0, 0.0, 0.0, 0.0, False, "eager has a gradient, compiled none"))
        else:
            checks.append(check(name, grads[name], expected, request, ref.fp64.get(name)))
    for name in grads.keys() - ref.grads.keys():
        g = grads[name]
        checks.append(TensorCheck(name, str(g.dtype).replace("torch.", ""), tuple(g.shape), 0.0, 0.0,
                                  0.0, 0.0, False, "compiled has a gradient, eager none"))
    return Verification(all(c.ok for c in checks), tuple(checks), reference="float64" if ref.fp64 else "")
