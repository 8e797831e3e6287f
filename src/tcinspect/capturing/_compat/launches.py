"""Every kernel launch an Inductor wrapper makes, intercepted for ``codegen --bench``.

Touches Inductor's Triton launcher (CachingAutotuner.run), its namespace of extern kernels
(torch._inductor.select_algorithm.extern_kernels) and OpOverload.__call__ (the wrapper's ``torch.ops.aten`` calls),
each patched only while the block runs; an operator's schema (which of its arguments it writes); torch.cuda._sleep,
so that a timed launch is enqueued before the GPU reaches it. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


class KernelLaunch:
    """One kernel launch made by an Inductor wrapper, as ``intercept_launches`` hands it over.

    ``replay(args, kwargs)`` launches the same kernel again (the original, un-intercepted call) on
    other arguments of the same layout; ``params`` names the positional arguments where torch says
    (a Triton kernel's signature, an operator's schema); ``roles`` maps a parameter to "write" or
    "readwrite" where torch states it.
    """

    def __init__(self, kind: str, name: str, wrapper: str, frame_id: int, replay: Callable[..., Any],
                 args: tuple, kwargs: dict[str, Any], params: tuple[str, ...] = (),
                 roles: dict[str, str] | None = None) -> None:
        self.kind = kind  # triton | extern
        self.name = name  # as the wrapper names it (the report's Kernel.name)
        self.wrapper = wrapper  # the wrapper module's file
        self.frame_id = frame_id  # the wrapper call this launch belongs to
        self.replay = replay
        self.args = args
        self.kwargs = kwargs
        self.params = params
        self.roles = roles or {}


def _wrapper_frame(depth: int) -> Any:
    """The calling frame if it is an Inductor wrapper's ``call`` (or a graph partition), else None.

    Wrapper modules import ``reinterpret_tensor`` and ``extern_kernels`` at their top
    (torch/_inductor/codegen/wrapper.py, 2.11-2.15); kernel modules and torch's own code do not.
    """
    import sys

    frame = sys._getframe(depth + 1)
    g = frame.f_globals
    return frame if "reinterpret_tensor" in g and "extern_kernels" in g else None


def _global_name(frame: Any, obj: Any) -> str:
    for key, value in frame.f_globals.items():
        if value is obj:
            return key
    return ""


def _schema_roles(op: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """An operator's argument names, and which it writes: ``out=`` (write) or in place (readwrite)."""
    names, roles = [], {}
    for arg in op._schema.arguments:  # torch._C.FunctionSchema (public in practice since 1.x)
        names.append(arg.name)
        alias = arg.alias_info
        if alias is not None and alias.is_write:
            roles[arg.name] = "write" if arg.kwarg_only and arg.name.startswith("out") else "readwrite"
    return tuple(names), roles


@contextlib.contextmanager
def intercept_launches(hook: Callable[[KernelLaunch], None]) -> Iterator[None]:
    """Call ``hook(launch)`` just before every kernel launch an Inductor wrapper makes; undo it after.

    What is patched, for the duration (torch 2.11-2.15):
    - ``CachingAutotuner.run`` (torch/_inductor/runtime/triton_heuristics.py): every generated and
      user Triton kernel; the wrapper calls ``kernel.run(*args, stream=...)``.
    - each callable of ``torch._inductor.select_algorithm.extern_kernels``: the wrapper looks
      ``extern_kernels.mm`` / ``addmm`` / ``bmm`` / ``convolution`` ... up on that namespace per call.
    - ``torch._ops.OpOverload.__call__``: the wrapper's ``torch.ops.aten.*`` calls (attention, RNG).
    Only calls made directly from a wrapper's frame are handed over; the hook's own calls are not.
    """
    import threading

    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    from torch._inductor.select_algorithm import extern_kernels
    from torch._ops import OpOverload

    busy = threading.local()

    def fire(launch: KernelLaunch) -> None:
        busy.on = True
        try:
            hook(launch)
        finally:
            busy.on = False

    def from_wrapper() -> Any:
        return None if getattr(busy, "on", False) else _wrapper_frame(2)

    orig_run = CachingAutotuner.run

    def run(self: Any, *args: Any, stream: Any, **kwargs: Any) -> Any:
        frame = from_wrapper()
        if frame is not None:
            signature = (getattr(self, "triton_meta", None) or {}).get("signature", {})
            meta = getattr(self, "inductor_meta", None) or {}
            name = _global_name(frame, self) or str(meta.get("kernel_name", "triton_kernel"))
            fire(KernelLaunch(
                "triton", name, frame.f_code.co_filename, id(frame),
                lambda a, k: orig_run(self, *a, stream=stream, **k), args, kwargs,
                params=tuple(n for n, t in signature.items() if t != "constexpr"),
                roles={n: "readwrite" for n in meta.get("mutated_arg_names", ())}))
        return orig_run(self, *args, stream=stream, **kwargs)

    originals = {k: v for k, v in vars(extern_kernels).items() if callable(v)}

    def extern(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            frame = from_wrapper()
            if frame is not None:
                fire(KernelLaunch("extern", name, frame.f_code.co_filename, id(frame),
                                  lambda a, k: fn(*a, **k), args, kwargs, roles={"out": "write"}))
            return fn(*args, **kwargs)
        return call

    orig_call = OpOverload.__call__

    def op_call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        frame = from_wrapper()
        if frame is not None:
            params, roles = _schema_roles(self)
            fire(KernelLaunch("extern", str(self), frame.f_code.co_filename, id(frame),
                              lambda a, k: orig_call(self, *a, **k), args, kwargs, params=params, roles=roles))
        return orig_call(self, *args, **kwargs)

    CachingAutotuner.run = run  # type: ignore[method-assign]  # patched while the block runs, restored below
    OpOverload.__call__ = op_call  # type: ignore[method-assign]  # the same
    for key, fn in originals.items():
        setattr(extern_kernels, key, extern(key, fn))
    try:
        yield
    finally:
        CachingAutotuner.run = orig_run  # type: ignore[method-assign]  # restoring torch's own method
        OpOverload.__call__ = orig_call  # type: ignore[method-assign]  # the same
        for key, fn in originals.items():
            setattr(extern_kernels, key, fn)


def gpu_sleep(cycles: float) -> None:
    """Keep the current stream busy for ``cycles`` GPU clock cycles (torch.cuda._sleep, 2.11-2.15).

    The kernel bench queues it before each timed launch so the launch is enqueued before the GPU
    reaches it: the CUDA events then time the kernel, not the Python that launched it.
    """
    torch.cuda._sleep(int(cycles))
