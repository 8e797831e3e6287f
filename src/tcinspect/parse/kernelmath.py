"""The arithmetic of `codegen --bench` (pure; no torch): bytes and FLOPs of one launch, and where it
lies on the roofline.

Bytes read and written come from the argument tensors' sizes and dtypes (each tensor counted once,
an in/out tensor once each way); FLOPs from matmul, convolution and attention shapes. The peaks
compared against are sourced (tcinspect.capturing.gpu_timing, tcinspect.capturing.datasheets): the
theoretical memory bandwidth, a measured device-to-device copy as the practical roof, and the dense
compute peak for the dtype.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Optional

from tcinspect.parse.measured import Arg, Launch

#: A kernel whose time at the roofline would be under this is bound by the fixed cost of a launch
#: on the GPU (a microsecond or two) rather than by bandwidth or compute.
LATENCY_US = 2.0


def tensor_bytes(shape: Sequence[int], stride: Sequence[int], itemsize: int) -> int:
    """Bytes a tensor spans once: broadcast (stride-0) dimensions are counted once."""
    if any(s == 0 for s in shape):
        return 0
    n = 1
    for size, step in zip(shape, stride):
        if step != 0:
            n *= size
    return n * itemsize


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def traffic(args: Iterable[Arg]) -> tuple[int, int]:
    """(bytes read, bytes written): an in/out tensor counts both ways, scratch space neither."""
    read = written = 0
    for a in args:
        b = tensor_bytes(a.shape, a.stride, a.itemsize)
        if a.role in ("read", "readwrite"):
            read += b
        if a.role in ("write", "readwrite"):
            written += b
    return read, written


_IDENT = re.compile(r"[A-Za-z_]\w*")
_STORE = re.compile(r"\btl\.(?:store|atomic_\w+)\(")


def _first_argument(text: str, start: int) -> str:
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return text[start:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return text[start:i]
    return text[start:]


def stored_names(source: str) -> set[str]:
    """Names a Triton kernel stores through (``tl.store`` / ``tl.atomic_*``), followed through assignments."""
    assigned: dict[str, set[str]] = {}
    for m in re.finditer(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$", source, re.M):
        assigned.setdefault(m[1], set()).update(_IDENT.findall(m[2]))
    found: set[str] = set()
    for m in _STORE.finditer(source):
        todo = set(_IDENT.findall(_first_argument(source, m.end())))
        while todo:
            name = todo.pop()
            if name not in found:
                found.add(name)
                todo |= assigned.get(name, set())
    return found


def resolve_roles(kind: str, args: Sequence[Arg], kernel_source: str = "") -> list[Arg]:
    """Every argument with a role: what torch stated, else Inductor's parameter names
    (``in_ptr``/``out_ptr``/``in_out_ptr``), else, for a user Triton kernel, the pointers its
    source stores through; anything else is read."""
    stores: Optional[set[str]] = None
    out = []
    for a in args:
        role = a.role
        if not role and kind == "triton":
            if a.name.startswith("in_out_ptr"):
                role = "readwrite"
            elif a.name.startswith("out_ptr"):
                role = "write"
            elif a.name.startswith("ws_ptr"):
                role = "scratch"
            elif a.name.startswith(("in_ptr", "arg_")):
                role = "read"
            else:
                if stores is None:
                    stores = stored_names(kernel_source)
                role = "write" if a.name in stores or (not stores and "out" in a.name) else "read"
        out.append(replace(a, role=role or "read"))
    return out


def _op(name: str) -> str:
    """``aten.mm.default`` -> ``mm``; ``mm`` -> ``mm``."""
    parts = name.split(".")
    return parts[1] if parts[0] in ("aten", "prims") and len(parts) > 1 else parts[0]


def _math_dtype(dtype: str, tf32: bool) -> str:
    return "tf32" if dtype == "f32" and tf32 else dtype


def _matmul(a: Arg, b: Arg) -> int:
    """2·M·K·N (times the batch for bmm)."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        return 0
    return 2 * _numel(a.shape) * b.shape[-1]


def _conv(x: Arg, w: Arg, out: Optional[Arg], transposed: bool) -> int:
    """2 × (each output element, or each input element when transposed) × the weights it meets."""
    per = _numel(w.shape[1:])
    if transposed:
        return 2 * _numel(x.shape) * per
    return 2 * _numel(out.shape) * per if out is not None else 0


def _attention(q: Arg, k: Arg, v: Arg, causal: bool, backward: bool) -> int:
    """Q·Kᵀ and P·V: 2·batch·L·S·(E + Ev); backward ≈ 2.5× forward; causal halves it."""
    if len(q.shape) < 2:
        return 0
    batch, length, e = _numel(q.shape[:-2]), q.shape[-2], q.shape[-1]
    flops = 2 * batch * length * k.shape[-2] * (e + v.shape[-1])
    if backward:
        flops = flops * 5 // 2
    return flops // 2 if causal else flops


def flops_of(kind: str, name: str, args: Sequence[Arg], scalars: dict[str, Any],
             tf32: tuple[bool, bool] = (False, True)) -> tuple[int, str]:
    """(FLOPs, the math's dtype) of a matmul, convolution or attention launch; (0, "") for others.

    ``args`` carry their roles (see resolve_roles); ``tf32`` is torch.backends' cuda.matmul.allow_tf32
    and cudnn.allow_tf32: float32 matmuls and convolutions run in TF32 when allowed.
    """
    named = {a.name: a for a in args}
    ins = [a for a in args if a.role in ("read", "readwrite")]
    outs = [a for a in args if a.role in ("write", "readwrite")]
    if kind == "triton":  # Inductor's templates name their operands arg_A/arg_B (mm) and arg_X/arg_W (conv)
        if "arg_A" in named and "arg_B" in named:
            a = named["arg_A"]
            return _matmul(a, named["arg_B"]), _math_dtype(a.dtype, tf32[0])
        if "arg_X" in named and "arg_W" in named:
            x = named["arg_X"]
            return _conv(x, named["arg_W"], outs[0] if outs else None, False), _math_dtype(x.dtype, tf32[1])
        return 0, ""
    op = _op(name)
    if op in ("mm", "bmm") and len(ins) >= 2:
        return _matmul(ins[0], ins[1]), _math_dtype(ins[0].dtype, tf32[0])
    if op in ("addmm", "baddbmm") and len(ins) >= 3:
        return _matmul(ins[1], ins[2]), _math_dtype(ins[1].dtype, tf32[0])
    if op in ("convolution", "_convolution") and len(ins) >= 2:
        transposed = bool(scalars.get("transposed", scalars.get("6", False)))
        return _conv(ins[0], ins[1], outs[0] if outs else None, transposed), _math_dtype(ins[0].dtype, tf32[1])
    if op == "convolution_backward" and {"grad_output", "input", "weight"} <= named.keys():
        transposed = bool(scalars.get("transposed", False))
        mask = scalars.get("output_mask") or [True, True, True]
        fwd = _conv(named["input"], named["weight"], named["grad_output"], transposed)
        return fwd * (int(bool(mask[0])) + int(bool(mask[1]))), _math_dtype(named["input"].dtype, tf32[1])
    if op.startswith("_scaled_dot_product") and {"query", "key", "value"} <= named.keys():
        q = named["query"]
        causal = bool(scalars.get("is_causal", False))
        return _attention(q, named["key"], named["value"], causal, op.endswith("_backward")), q.dtype
    return 0, ""


def _sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant digits (tiny kernels reach only fractions of a GB/s)."""
    return float(f"{x:.{digits}g}")


def roofline(median_us: float, nbytes: int, flops: int, bandwidth: float, copy: float,
             compute: float, latency_us: float = LATENCY_US) -> dict[str, Any]:
    """Where one kernel lies: achieved GB/s and TFLOP/s, as % of each peak, which roof bounds it.

    ``bandwidth`` and ``copy`` are GB/s (1e9 B/s), ``compute`` TFLOP/s for the kernel's dtype;
    0 means unknown. The roof at the kernel's arithmetic intensity I = FLOPs/bytes is
    min(compute, I × bandwidth): past the ridge point a kernel is compute-bound.
    """
    out: dict[str, Any] = {"gb_per_s": 0.0, "pct_of_bandwidth": 0.0, "pct_of_copy": 0.0, "tflop_per_s": 0.0,
                           "pct_of_compute": 0.0, "bound": "", "pct_of_roofline": 0.0}
    if median_us <= 0:
        return out
    seconds = median_us * 1e-6
    gbs = nbytes / seconds / 1e9
    tflops = flops / seconds / 1e12
    roof_bw = bandwidth or copy
    out["gb_per_s"] = _sig(gbs)
    out["pct_of_bandwidth"] = _sig(100 * gbs / bandwidth) if bandwidth else 0.0
    out["pct_of_copy"] = _sig(100 * gbs / copy) if copy else 0.0
    out["tflop_per_s"] = _sig(tflops)
    out["pct_of_compute"] = _sig(100 * tflops / compute) if compute and flops else 0.0
    memory_s = nbytes / (roof_bw * 1e9) if roof_bw else 0.0
    compute_s = flops / (compute * 1e12) if compute and flops else 0.0
    if compute_s > memory_s:
        bound, achieved = "compute", out["pct_of_compute"]
    else:
        bound, achieved = "memory", _sig(100 * gbs / roof_bw) if roof_bw else 0.0
    if max(memory_s, compute_s) * 1e6 < latency_us:
        bound = "latency"
    out["bound"] = bound if roof_bw or compute_s else ""
    out["pct_of_roofline"] = achieved
    return out


def less_overhead(ms: float, overhead_us: float) -> float:
    """A CUDA-event time in ms as GPU time in µs: less the fixed cost of timing one launch (never below 10 ns)."""
    return max(ms * 1e3 - overhead_us, 0.01)


def compute_dtypes(launches: Iterable[Launch], tf32: tuple[bool, bool]) -> set[str]:
    """The dtypes whose compute peak the launches need."""
    out = set()
    for x in launches:
        flops, dtype = flops_of(x.kind, x.name, resolve_roles(x.kind, x.args), x.scalars, tf32)
        if flops and dtype:
            out.add(dtype)
    return out
