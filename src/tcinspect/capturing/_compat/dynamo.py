"""torch.compile and Dynamo's own state: what a capture resets, reads and sets around a compile.

Touches torch._dynamo's reset, its run counters (torch._dynamo.utils.counters) and config (torch._dynamo.config.patch),
its backend registry, the side table of user Triton kernels it keeps until a reset, its counting backend
(torch._dynamo.testing), mark_dynamic, the frames and cache entries it holds (convert_frame.input_codes,
eval_frame._debug_get_cache_entry_list: the per-call view), and the function torch.compile builds
(eval_frame.OptimizeContext), to count a script's calls into what it compiled. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from tcinspect.errors import DynamoConfigError


def reset_dynamo() -> None:
    """Forget compiled frames and counters (torch._dynamo.reset, public since 2.0)."""
    torch._dynamo.reset()


def dynamo_counters() -> dict[str, Any]:
    """Dynamo's run counters as PyTorch CI reads them (benchmarks/dynamo/check_graph_breaks.py): ``stats``
    (calls_captured, unique_graphs), ``frames`` (total, ok) and the ``graph_break`` total. torch._dynamo.utils.counters
    (private: a Counter per group, 2.0-2.15), cleared by torch._dynamo.reset."""
    from torch._dynamo.utils import counters

    return {"stats": {k: int(v) for k, v in counters["stats"].items()},
            "frames": {k: int(v) for k, v in counters["frames"].items()},
            "graph_break": int(sum(counters["graph_break"].values()))}


@contextlib.contextmanager
def dynamo_config(settings: Sequence[str]) -> Iterator[None]:
    """torch._dynamo.config with ``settings`` (``name=value``, Options.dynamo_config) applied for the duration,
    through torch._dynamo.config.patch (public since 2.0), which restores every value after.

    A bool config takes True/False; a set-valued one (reorderable_logging_functions, ignore_logging_functions:
    sets of functions, 2.11-2.15) takes dotted names of functions, comma-separated, added to its set; any other
    config a Python literal. A name this torch does not have is a DynamoConfigError (nested_graph_breaks, say,
    where a torch predates it)."""
    if not settings:
        yield
        return
    import torch._dynamo.config as config

    changes: dict[str, Any] = {}
    for setting in settings:
        name, eq, text = (part.strip() for part in setting.partition("="))
        if not eq or not name.isidentifier():
            raise DynamoConfigError(f"dynamo_config {setting!r} is not NAME=VALUE",
                                    "give each setting as NAME=VALUE, e.g. capture_scalar_outputs=True")
        if not hasattr(config, name):
            raise DynamoConfigError(f"torch {torch.__version__} has no torch._dynamo.config.{name}",
                                    "leave it out: this torch version does not have that setting")
        current = getattr(config, name)
        if isinstance(current, (set, frozenset)):
            changes[name] = set(current) | {_function_named(n.strip(), name) for n in text.split(",") if n.strip()}
        elif isinstance(current, bool):
            if text.lower() not in ("true", "false"):
                raise DynamoConfigError(f"torch._dynamo.config.{name} is True or False, not {text!r}",
                                        f"give {name}=True or {name}=False")
            changes[name] = text.lower() == "true"
        else:
            try:
                changes[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise DynamoConfigError(f"dynamo_config {setting!r}: {text!r} is not a Python literal",
                                        f"give {name}= a number, a string in quotes, True, False or None") from None
    with config.patch(**changes):
        yield


def _function_named(dotted: str, config_name: str) -> Any:
    """The function a dotted name names: a builtin (``print``) or ``module.function`` (``warnings.warn``)."""
    import builtins
    import importlib

    parts = dotted.split(".")
    if len(parts) == 1 and callable(getattr(builtins, dotted, None)):
        return getattr(builtins, dotted)
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                found = getattr(found, attr)
        except AttributeError:
            break
        if callable(found):
            return found
        break
    raise DynamoConfigError(f"torch._dynamo.config.{config_name}: no function named {dotted!r}",
                            "give a builtin (print) or a module-level function as module.function (warnings.warn)")


def compile_fn(model: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """torch.compile, public API; kwargs pass through unchanged."""
    return torch.compile(model, **kwargs)


def registered_backends(everything: bool = True) -> list[str]:
    """Names torch.compile accepts as ``backend=`` (torch._dynamo.list_backends, 2.11-2.15).

    ``everything=False`` leaves out the debug and experimental ones, as torch's own listing does.
    """
    if everything:
        return sorted(torch._dynamo.list_backends(exclude_tags=()))
    return sorted(torch._dynamo.list_backends())


def user_kernel_table() -> tuple[dict[int, tuple[str, str]], dict[int, str]]:
    """User Triton kernels Dynamo has seen: kernel_idx -> (name, source); constant_args_idx -> text.

    PyTorch keeps them in a side table (torch/_higher_order_ops/triton_kernel_wrap.py,
    ``kernel_side_table``, 2.11-2.15), cleared by torch._dynamo.reset(): read it before that.
    """
    import inspect

    try:
        from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    except ImportError:
        return {}, {}
    kernels: dict[int, tuple[str, str]] = {}
    for idx, kernel in dict(kernel_side_table.id_to_kernel).items():
        fn: Any = getattr(kernel, "fn", kernel)  # a JITFunction or an Autotuner around one
        fn = getattr(fn, "fn", fn)
        name = getattr(fn, "__name__", type(kernel).__name__)
        try:
            source = getattr(getattr(kernel, "fn", kernel), "src", "") or inspect.getsource(fn)
        except (OSError, TypeError):
            source = ""
        kernels[idx] = (name, source)
    constants = {idx: ", ".join(f"{k}={v!r}" for k, v in args.items())
                 for idx, args in dict(kernel_side_table.constant_args).items()}
    return kernels, constants


def compile_counter(backend: str) -> Any:
    """A backend that counts the frames it is handed and hands them on to ``backend``
    (torch._dynamo.testing.CompileCounterWithBackend, 2.11-2.15)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    return CompileCounterWithBackend(backend)


def frame_count(counter: Any) -> int:
    return int(counter.frame_count)


def mark_dynamic(tensor: Any, dim: int, low: int, high: int) -> None:
    """torch._dynamo.mark_dynamic with a range (min/max keywords: 2.11-2.15)."""
    import torch

    torch._dynamo.mark_dynamic(tensor, dim, min=low, max=high)


def frame_cache_entries() -> list[tuple[Any, list[str]]]:
    """Every frame Dynamo has seen since its last reset, with its cache entries' compile ids in the order
    Dynamo tries them: ``[(code, ["0/1", "0/0"]), ...]``; frames without entries are left out.

    ``torch._dynamo.convert_frame.input_codes`` holds weak references to the code objects Dynamo was handed
    (a ``Tracker``; ``reset()`` clears it), and ``torch._dynamo.eval_frame._debug_get_cache_entry_list(code)``
    returns a code's cache entries, front first, each with its ``compile_id`` (2.11-2.15). A torch without
    them answers [] (the per-call view then says it could not read the cache entries).
    """
    try:
        from torch._dynamo import convert_frame
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return []
    out = []
    for ref in list(getattr(convert_frame.input_codes, "seen", [])):
        code = ref()
        if code is None:
            continue
        entries = _debug_get_cache_entry_list(code)
        if entries:
            out.append((code, [str(getattr(e, "compile_id", "") or "") for e in entries]))
    return out


@contextlib.contextmanager
def counting_compiled_calls(on_call: Callable[[], None]) -> Iterator[None]:
    """Call ``on_call`` each time a script calls into what it compiled (outermost calls only).

    Wraps the function ``torch._dynamo.eval_frame.OptimizeContext.__call__`` returns (what
    ``torch.compile`` builds, directly for a function, through ``OptimizedModule._initialize`` for a
    module, 2.11-2.15); a module's ``OptimizedModule`` itself is left as it is. Calls made inside a
    compiled call (a compiled function calling another) are not counted again. Restored on exit.
    """
    import functools
    import threading

    from torch._dynamo import eval_frame

    context = getattr(eval_frame, "OptimizeContext", None)
    if context is None:
        yield  # no such class in this torch: the calls are not counted
        return
    # 2.13 defines OptimizeContext.__call__ (it marks the result _is_torch_compile); where it inherits
    # _TorchDynamoContext.__call__ instead, the patch is set on OptimizeContext and deleted after
    own = "__call__" in vars(context)
    original = context.__call__
    depth = threading.local()

    def patched(self: Any, fn: Any) -> Any:
        result = original(self, fn)
        if isinstance(result, torch.nn.Module) or not callable(result):
            return result

        @functools.wraps(result)
        def counted(*args: Any, **kwargs: Any) -> Any:
            level = getattr(depth, "n", 0)
            if level == 0:
                on_call()
            depth.n = level + 1
            try:
                return result(*args, **kwargs)
            finally:
                depth.n = level

        return counted

    context.__call__ = patched
    try:
        yield
    finally:
        if own:
            context.__call__ = original
        else:
            del context.__call__
