"""Every private torch access tcinspect makes, in one place, version by version.

Supported: torch 2.11 (the GPU machines) to 2.15 (2.13-2.15 on the CPU machines). Each function names
what it touches and why.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import logging
import os
import re
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any, NamedTuple, Optional

import torch

from tcinspect.errors import DynamoConfigError

#: The structured-trace logger (torch/_logging/_internal.py: ``trace_log``). It never
#: propagates; trace_structured() emits only while it has a handler (2.11-2.15).
TRACE_LOGGER_NAME = "torch.__trace"


def torch_version() -> str:
    return str(torch.__version__)


@contextlib.contextmanager
def trace_handler(handler: logging.Handler) -> Iterator[None]:
    """Attach ``handler`` to the structured-trace logger for the duration; restore it after."""
    logger = logging.getLogger(TRACE_LOGGER_NAME)
    old_level = logger.level
    # its records carry their data as attributes and an empty message; pytest (8+) attaches its log
    # capture to every non-propagating logger, so a failing test would print ~180 empty "DEBUG
    # torch.__trace" lines. Handlers the root logger also has (catch-alls like pytest's) are detached
    # for the duration; TORCH_TRACE's own handler is the trace logger's alone and stays.
    catch_alls = [h for h in logger.handlers if h in logging.getLogger().handlers]
    for h in catch_alls:
        logger.removeHandler(h)
    # first, not last: torch's LazyTraceHandler removes itself from trace_log.handlers while the
    # first record of a process is being handled (no TORCH_TRACE dir; torch/_logging/_internal.py,
    # 2.11-2.15), and logging's loop over that list then skips the handler after it
    logger.handlers.insert(0, handler)
    # trace_log is created at DEBUG; someone may have raised it (2.11-2.15 all check level)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        for h in catch_alls:
            logger.addHandler(h)


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """Silence torch's own log output (the "torch" logger's handlers) for the duration.

    torch installs stderr handlers on "torch" and on each registered component logger
    ("torch._dynamo", "torch._subclasses.fake_tensor", ...) at import (torch/_logging/_internal.py,
    2.11-2.15) and logs e.g. fake-tensor errors there; the report already holds what they say.
    The structured-trace logger keeps its handlers, so recording is unaffected.
    """
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if (name == "torch" or name.startswith("torch.")) and name != TRACE_LOGGER_NAME]
    handlers = list(dict.fromkeys(h for lg in loggers for h in lg.handlers))
    drop = _DropAll()
    for h in handlers:
        h.addFilter(drop)
    try:
        with warnings.catch_warnings():
            # Dynamo's tracing warnings (e.g. "does not know how to trace the builtin ...") repeat what
            # the graph-break records say; the user's own warnings still show
            warnings.filterwarnings("ignore", module=r"torch(\.|$)")
            yield
    finally:
        for h in handlers:
            h.removeFilter(drop)


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


@contextlib.contextmanager
def private_inductor_cache() -> Iterator[str]:
    """A fresh, empty Inductor/Triton cache directory: a cold compile (``--fresh``).

    TORCHINDUCTOR_CACHE_DIR is read on each cache access (torch._inductor.runtime.cache_dir_utils,
    2.11-2.15); the in-memory caches are cleared too so that nothing warm survives in-process.
    """
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    old_triton = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tcinspect-inductor-") as tmp:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tmp
        os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
        _clear_in_memory_caches()
        try:
            yield tmp
        finally:
            _restore_env("TORCHINDUCTOR_CACHE_DIR", old)
            _restore_env("TRITON_CACHE_DIR", old_triton)
            _clear_in_memory_caches()


def _restore_env(key: str, value: Any) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def _clear_in_memory_caches() -> None:
    # torch._inductor.utils.clear_caches / fresh_cache helpers moved between versions; the
    # code caches below exist with cache_clear() in 2.11-2.15.
    try:
        from torch._inductor import codecache

        for name in ("PyCodeCache", "CppCodeCache", "CppPythonBindingsCodeCache"):
            cls = getattr(codecache, name, None)
            if cls is not None and hasattr(cls, "cache_clear"):
                cls.cache_clear()
    except Exception:  # noqa: BLE001 - a cache we cannot clear only makes the compile warmer
        pass


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


def log_artifact(name: str, payload: str) -> None:
    """Log a JSON artifact on the structured trace, under the compile id being compiled.

    trace_structured attaches the current compile id itself (torch/_logging/_internal.py, 2.11-2.15),
    so tcinspect's own records land beside PyTorch's for the same graph.
    """
    from torch._logging import trace_structured

    trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "json"}, payload_fn=lambda: payload)


def inductor_with_inner(inner: Callable[..., Any]) -> Callable[..., Any]:
    """An Inductor backend whose per-graph compile goes through ``inner(gm, example_inputs, next, **kw)``.

    compile_fx takes an ``inner_compile`` (torch/_inductor/compile_fx.py, 2.11-2.15): it receives each
    ATen graph after AOTAutograd (forward, backward or inference) before Inductor lowers it.
    """
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def part_of(kwargs: dict[str, Any]) -> str:
        if kwargs.get("is_backward"):
            return "backward"
        return "inference" if kwargs.get("is_inference") else "forward"

    def inner_compile(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        gm = inner(gm, part_of(kwargs))
        return compile_fx_inner(gm, example_inputs, *args, **kwargs)

    def backend(gm: Any, example_inputs: Any) -> Any:
        # AOTAutograd's cache keys the Dynamo graph and the configs, not ``inner``: an entry from a run without it
        # (the user's own torch.compile) or with another pass would be loaded and ``inner`` never called
        # (torch/_functorch/aot_autograd.py: ``AOTAutogradCache.try_load`` for compile_fx's compilers, 2.11-2.15).
        # Off for this compile, no entry is read or written; the FX graph cache keys the graph ``inner`` returned.
        with torch._functorch.config.patch(enable_autograd_cache=False):
            return compile_fx(gm, example_inputs, inner_compile=inner_compile)

    return backend


def unlowerable_ops(gm: Any) -> list[str]:
    """The ATen ops in ``gm`` that Inductor cannot lower: it has no lowering for them, only a decomposition.

    AOTAutograd decomposes them with Inductor's table (torch/_inductor/decomposition.py, ``select_decomp_table``)
    before Inductor sees a graph, so only a pass that runs after it puts one back; Inductor's GraphLowering then
    fails ("both a fallback and a decomp for same op", or MissingOperatorWithDecomp without implicit fallbacks:
    torch/_inductor/graph.py ``call_function``, 2.11-2.15). Ops on Inductor's FALLBACK_ALLOW_LIST lower anyway.
    """
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.lowering import FALLBACK_ALLOW_LIST, lowerings

    table = select_decomp_table()
    found: list[str] = []
    for node in gm.graph.nodes:
        op = node.target
        if (node.op == "call_function" and isinstance(op, torch._ops.OpOverload) and op not in lowerings
                and op in table and op.name().split(".")[0] not in FALLBACK_ALLOW_LIST and str(op) not in found):
            found.append(str(op))
    return found


def decompose_for_inductor(gm: Any, ops: Sequence[str]) -> Any:
    """``gm`` with each node calling one of ``ops`` replaced by its decomposition from Inductor's own table, traced
    on the node's fake values as Inductor traces its pattern replacements (torch/_inductor/pattern_matcher.py
    ``fwd_only``: make_fx with the decomposition table, ``tracing_mode="real"``, under the python dispatcher,
    2.11-2.15). The new nodes keep the replaced node's stack trace and provenance metadata; the rest of the graph
    (its placeholders, names and other nodes) is unchanged."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    table = select_decomp_table()
    kept_meta = ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten", "from_node", "seq_nr",
                 "fwd_source_fn_stack", "partitioner_tag", "autograd_backward", "custom")
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or str(node.target) not in ops:
            continue
        flat, spec = pytree.tree_flatten((node.args, node.kwargs))
        is_node = [isinstance(a, torch.fx.Node) for a in flat]
        values = [a.meta["val"] for a, n in zip(flat, is_node) if n]
        target = node.target

        def call(*vals: Any, _flat: list[Any] = flat, _is_node: list[bool] = is_node, _spec: Any = spec,
                 _target: Any = target) -> Any:
            it = iter(vals)
            args, kwargs = pytree.tree_unflatten([next(it) if n else a for a, n in zip(_flat, _is_node)], _spec)
            return _target(*args, **kwargs)

        fake_mode = detect_fake_mode(values)
        with fake_mode if fake_mode is not None else contextlib.nullcontext(), enable_python_dispatcher():
            sub = make_fx(call, table, tracing_mode="real")(*values)
        inputs = [a for a, n in zip(flat, is_node) if n]
        env = dict(zip([n for n in sub.graph.nodes if n.op == "placeholder"], inputs))
        with graph.inserting_before(node):
            out = graph.graph_copy(sub.graph, env)
        for new in env.values():
            if isinstance(new, torch.fx.Node) and all(new is not a for a in inputs):
                new.meta.update({k: node.meta[k] for k in kept_meta if k in node.meta and not new.meta.get(k)})
        if isinstance(out, torch.fx.Node):
            node.replace_all_uses_with(out)
        else:  # an op of several outputs: its users are getitem nodes
            for user in list(node.users):
                user.replace_all_uses_with(out[user.args[1]])
                graph.erase_node(user)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm


def aot_eager_with_inner(inner: Callable[..., Any]) -> Callable[..., Any]:
    """aot_eager whose forward and backward ATen graphs go through ``inner(gm, part)`` first."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def compiler(part: str) -> Callable[..., Any]:
        def run(gm: Any, example_inputs: Any) -> Any:
            return make_boxed_func(inner(gm, part))
        return run

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"))


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


def is_graph_module(value: Any) -> bool:
    return isinstance(value, torch.fx.GraphModule)


def raised_in_torch(exc: BaseException) -> bool:
    """Whether the deepest frame of an exception's traceback is inside the torch package."""
    import traceback as tb

    frames = tb.extract_tb(exc.__traceback__)
    if not frames:
        return True
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    return os.path.abspath(frames[-1].filename).startswith(torch_dir + os.sep)


def aoti_compile_and_package(exported_program: Any, package_path: str) -> str:
    """AOTInductor: compile an ExportedProgram into a .pt2 package (torch._inductor, 2.11-2.15)."""
    return torch._inductor.aoti_compile_and_package(exported_program, package_path=package_path)


def aoti_load_package(package_path: str) -> Callable[..., Any]:
    return torch._inductor.aoti_load_package(package_path)


# ----------------------------------------------------------------------------- codegen --bench


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


# ----------------------------------------------------------------------------- provenance tracking
#
# Inductor's provenance tracking (torch._inductor.config.trace.provenance_tracking_level, 2.11-2.15)
# logs two artifacts after each graph's output code: ``inductor_provenance_tracking_node_mappings``
# (kernel "name:handle" -> post-grad nodes as ``cppCodeToPost``, post-grad -> pre-grad nodes) and
# ``inductor_provenance_tracking_kernel_stack_traces`` (kernel -> the stack traces of its nodes).
# The wrapper writes "# [Provenance debug handles] name:handle" above each launch.
#
# Two gaps in 2.11-2.15, read from torch/_inductor/debug.py and compile_fx.py:
# - the node mapping is built only while ``debug._pre_grad_graph_id`` is set, i.e. inside
#   compile_fx's ``reset_provenance_globals()``; a backward graph compiled lazily (at the first
#   ``.backward()``) gets ``{"version": 2.0}`` alone, though Inductor recorded the kernel -> node
#   lists in ``debug._inductor_triton_kernel_to_post_grad_node_info`` all the same;
# - outside that context the two module-level dicts are never reset, so each later backward's
#   stack-trace artifact also carries the kernels of every earlier backward (keys can collide:
#   "extern_kernels.mm:2" in two graphs).
# provenance_snapshot() reads the live lists when the stack-trace artifact is logged and then
# empties both dicts, so every graph's artifacts hold that graph's kernels only.

_MODULE_PATH = re.compile(r"_modules\[['\"]([^'\"]+)['\"]\]|\[['\"]?([^'\"\]]+)['\"]?\]")


@contextlib.contextmanager
def provenance_tracking(written: Optional[list[str]] = None) -> Iterator[None]:
    """Turn Inductor's provenance tracking on (level 1) for the duration; restore level and state after.

    The level is part of the FX graph cache key (codecache.FxGraphHashDetails sets
    ``provenance_tracking_level`` from the config, 2.11-2.15; AOTAutogradCacheDetails inherits it),
    because a tracked entry holds the node mappings and its output code the "[Provenance debug
    handles]" comments. A compile that turned tracking on would look up, and fill, entries of its own
    that the user's runs never read. So, unless the user already tracks at level 1:

    - the key keeps the user's own level (set back on each FxGraphHashDetails after its __init__):
      every look-up is the one the user's run makes, so hit, miss and bypass, and the time a hit
      takes, are the user's;
    - nothing compiled here is saved in the FX graph or AOTAutograd cache (FxGraphCache._save_graph
      and AOTAutogradCache.save do nothing, local and remote): its content is not what the user's run
      would store under that key;
    - the output code modules a miss wrote (tracked code, under the hash of its text) are listed in
      ``written`` by the recorder and removed afterwards (``remove_tracked_code``).

    Kernel sources compiled on a miss do not depend on the level and are left, as the user's run leaves them.
    """
    from torch._inductor import config as inductor_config
    from torch._inductor import debug as inductor_debug

    old_level = inductor_config.trace.provenance_tracking_level
    saved = {name: getattr(inductor_debug, name, None) for name in _PROVENANCE_STATE}
    for name, value in saved.items():
        if isinstance(value, dict):
            setattr(inductor_debug, name, {})
    inductor_config.trace.provenance_tracking_level = 1
    with contextlib.ExitStack() as stack:
        if old_level != 1:
            stack.enter_context(_user_cache_key(old_level))
        try:
            yield
        finally:
            inductor_config.trace.provenance_tracking_level = old_level
            if old_level != 1 and written:
                remove_tracked_code(written)
            for name, value in saved.items():
                if value is not None:
                    setattr(inductor_debug, name, value)


@contextlib.contextmanager
def _user_cache_key(level: int) -> Iterator[None]:
    """Look up the user's cache entries (their provenance level in the key) and save none (2.11-2.15)."""
    from torch._functorch._aot_autograd import autograd_cache
    from torch._inductor import codecache

    details = codecache.FxGraphHashDetails
    init = details.__init__
    save_graph = codecache.FxGraphCache.__dict__["_save_graph"]
    save_aot = autograd_cache.AOTAutogradCache.__dict__["save"]

    def keyed_as_user(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if hasattr(self, "provenance_tracking_level"):
            self.provenance_tracking_level = level

    def no_save(*args: Any, **kwargs: Any) -> None:
        return None

    details.__init__ = keyed_as_user  # type: ignore[method-assign]
    codecache.FxGraphCache._save_graph = staticmethod(no_save)  # type: ignore[method-assign,assignment]
    autograd_cache.AOTAutogradCache.save = staticmethod(no_save)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        details.__init__ = init  # type: ignore[method-assign]
        codecache.FxGraphCache._save_graph = save_graph  # type: ignore[method-assign]
        autograd_cache.AOTAutogradCache.save = save_aot  # type: ignore[method-assign]


#: the comment Inductor writes above each launch in tracked output code (codegen/wrapper.py, 2.11-2.15)
TRACKED_CODE_MARK = "[Provenance debug handles]"


def remove_tracked_code(paths: Sequence[str]) -> None:
    """Remove the output code modules a tracked miss wrote into Inductor's cache directory.

    Only files under the cache directory whose text carries the tracking comments go: untracked code
    loaded from the user's own entries never does.
    """
    root = os.path.realpath(inductor_cache_dir()) + os.sep
    for path in dict.fromkeys(paths):
        real = os.path.realpath(path)
        if not real.startswith(root) or not real.endswith(".py"):
            continue
        try:
            with open(real, encoding="utf-8", errors="replace") as f:
                tracked = TRACKED_CODE_MARK in f.read()
            if tracked:
                os.unlink(real)
                for suffix in ("c", "o"):  # no bytecode is written for them (PyCodeCache), but be sure
                    with contextlib.suppress(OSError):
                        os.unlink(real + suffix)
        except OSError:
            pass


#: torch/_inductor/debug.py's module-level provenance dicts (2.11-2.15)
_PROVENANCE_STATE = ("_inductor_triton_kernel_to_post_grad_node_info", "_inductor_kernel_stack_trace")


def module_path(nn_module_stack: Any, names: Optional[dict[str, str]] = None) -> str:
    """The innermost module of a node's ``nn_module_stack`` as a dotted path.

    The stack's keys are ``str(id(module))`` (torch/_dynamo/variables/nn_module.py, 2.11-2.15): when
    ``names`` maps those ids to names in the user's root model (``named_modules()``), that name is
    used, so a module compiled after a graph break still reads ``m.transformer.h.0``. Otherwise
    Dynamo's path relative to the compiled frame, e.g. ``L['self'].transformer.h.0.attn`` or
    ``L['self']._modules['0']``, with the root (``L['self']``, ``L['fn']``) dropped.
    """
    if not nn_module_stack:
        return ""
    try:
        key, entry = list(nn_module_stack.items())[-1]
        path = entry[0]
    except (AttributeError, IndexError, TypeError, KeyError):
        return ""
    if names and str(key) in names:
        return names[str(key)]
    path = str(path)
    m = re.match(r"^(?:L|G)\[['\"][^'\"]+['\"]\]", path)
    rest = path[m.end():] if m else path
    rest = _MODULE_PATH.sub(lambda x: "." + (x.group(1) or x.group(2)), rest)
    return rest.strip(".")


def provenance_snapshot(names: Optional[dict[str, str]] = None) -> tuple[str, dict[str, Any]]:
    """What Inductor knows of the graph whose provenance artifacts are being logged right now.

    Called from the trace handler while ``inductor_provenance_tracking_kernel_stack_traces`` is
    logged. Returns ("compile", {"kernels": {"name:handle": [post-grad nodes]}, "modules":
    {post-grad node: module path}}) when Inductor has just generated the code (the caller is
    ``codegen_and_compile`` in compile_fx.py, whose local ``gm`` is the post-grad graph, 2.11-2.15),
    ("cache_hit", {}) when the code came from the FX graph cache (``cache_hit_post_compile``), and
    ("", {}) otherwise. Empties Inductor's two module-level provenance dicts afterwards.
    """
    from torch._inductor import debug as inductor_debug

    where, data = "", {}
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        if name == "cache_hit_post_compile":
            where = "cache_hit"
            break
        if name == "codegen_and_compile" and "gm" in frame.f_locals:
            gm = frame.f_locals["gm"]
            modules: dict[str, str] = {}
            for node in getattr(getattr(gm, "graph", None), "nodes", ()):
                stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack")
                path = module_path(stack, names)
                if path or stack:
                    modules[node.name] = path
            live = getattr(inductor_debug, "_inductor_triton_kernel_to_post_grad_node_info", None) or {}
            where, data = "compile", {"kernels": {k: list(v) for k, v in live.items()}, "modules": modules}
            break
        frame = frame.f_back
    del frame
    for state in _PROVENANCE_STATE:
        value = getattr(inductor_debug, state, None)
        if isinstance(value, dict):
            value.clear()
    return where, data


def module_names(model: Any) -> dict[str, str]:
    """``str(id(module))`` -> qualified name for every submodule of an ``nn.Module`` (else empty)."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {str(id(m)): name for name, m in model.named_modules()}


def inductor_cache_dir() -> str:
    """Inductor's cache directory as it resolves now (TORCHINDUCTOR_CACHE_DIR or the default under
    the temp dir; torch/_inductor/runtime/cache_dir_utils.py, 2.11-2.15)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return str(cache_dir())


#: The loggers torch's CUDA graph skips go to: the ``cudagraphs`` artifact of _inductor/cudagraph_utils.py
#: (log_cudagraph_skip_and_bump_counter, 2.11-2.15) and of _inductor/cudagraph_trees.py. Not off by default,
#: so a skip's WARNING reaches them with no logging setting changed.
CUDAGRAPH_LOGGERS = ("torch._inductor.cudagraph_utils.__cudagraphs", "torch._inductor.cudagraph_trees.__cudagraphs")


class _CudagraphSkips(logging.Handler):
    def __init__(self, on_skip: Callable[[str, str, str], None]) -> None:
        super().__init__(level=logging.WARNING)
        self.on_skip = on_skip

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record torch formats badly is not tcinspect's to raise
            return
        if message.startswith("skipping cudagraph"):
            compile_id, part = _cudagraph_owner(sys._getframe(1))
            self.on_skip(message, compile_id, part)


def _cudagraph_owner(frame: Optional[FrameType]) -> tuple[str, str]:
    """The compile id and graph (forward/backward/inference, or "") a skip being logged belongs to.

    At run time (check_for_mutation, the re-record limit) the caller is a method of
    cudagraph_trees.CUDAGraphTreeManager, which sets ``self.compile_id`` in ``run`` and keeps each function's
    CompilationMode in ``id_to_mode`` (2.11 and 2.13). While compiling (output_code.post_compile and
    cudagraph_post_compile) the compile id is the current CompileContext's and the graph's side is the local
    ``is_backward`` of the frame that decided it.
    """
    compile_id, part = "", ""
    while frame is not None:
        local = frame.f_locals
        manager = local.get("self")
        if manager is not None and hasattr(manager, "id_to_mode") and hasattr(manager, "compile_id"):
            compile_id = str(manager.compile_id or "")
            fid = local.get("function_id")
            mode = manager.id_to_mode.get(fid) if fid is not None else None
            part = str(getattr(mode, "name", "")).lower()
            break
        if not part and isinstance(local.get("is_backward"), bool):
            part = "backward" if local["is_backward"] else "forward"
        frame = frame.f_back
    if not compile_id:
        try:
            from torch._guards import CompileContext

            compile_id = str(CompileContext.current_compile_id() or "")
        except Exception:  # noqa: BLE001 - no compile id is an answer ("")
            compile_id = ""
    return ("" if compile_id == "None" else compile_id), part


@contextlib.contextmanager
def cudagraph_skip_log(on_skip: Callable[[str, str, str], None]) -> Iterator[None]:
    """Call ``on_skip(message, compile_id, part)`` for every CUDA graph skip torch logs for the duration."""
    handler = _CudagraphSkips(on_skip)
    loggers = [logging.getLogger(name) for name in CUDAGRAPH_LOGGERS]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        yield
    finally:
        for lg in loggers:
            lg.removeHandler(handler)


def cudagraph_step_begin() -> None:
    """Mark a new step for CUDA graph trees, as torch's docs ask of a loop that calls a reduce-overhead model
    (its outputs of the last step may be overwritten); torch.compiler.cudagraph_mark_step_begin, 2.11-2.15."""
    torch.compiler.cudagraph_mark_step_begin()


_interned: dict[int, str] = {}


def interned_files() -> dict[int, str]:
    """Index -> file name of the strings torch interned for stack frames in trace records
    (torch/_logging/structured.py INTERN_TABLE, 2.11-2.15): a process logs each name once, so a later
    capture in the same process sees only the index."""
    from torch._logging import structured

    table = getattr(structured, "INTERN_TABLE", {})
    if len(table) != len(_interned):
        _interned.clear()
        _interned.update({index: name for name, index in table.items()})
    return _interned


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


def saved_modules(names: Optional[dict[str, str]] = None) -> tuple[dict[str, str], str]:
    """Each node of the forward graph whose ``aot_forward_graph`` artifact is being logged right now, with
    its module path (from ``nn_module_stack``), and a note when there is no graph to read.

    Called from the trace handler while the artifact is logged. On a fresh compile the caller is
    ``_log_fw_bw_graphs(fw_module, ...)`` in torch/_functorch/_aot_autograd/graph_compile.py (2.11-2.15);
    any frame holding a GraphModule named ``fw_module`` is taken. An AOTAutograd cache hit logs the stored
    text from aot_autograd_result.py, with no graph module: the modules are not known then.
    """
    frame: Optional[FrameType] = sys._getframe(1)
    try:
        while frame is not None:
            gm = frame.f_locals.get("fw_module") if frame.f_code.co_name != "<module>" else None
            if isinstance(gm, torch.fx.GraphModule):
                modules: dict[str, str] = {}
                for node in gm.graph.nodes:
                    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack")
                    path = module_path(stack, names)
                    if path:
                        modules[node.name] = path
                return modules, ""
            frame = frame.f_back
    finally:
        del frame
    return {}, "module paths unknown: the graph came from the AOTAutograd cache (run with --fresh to see them)"


class _SignpostHandler(logging.Handler):
    """Re-logs Inductor's peak-memory signpost as a tcinspect artifact on the structured trace."""

    def __init__(self, artifact: str) -> None:
        super().__init__(level=logging.INFO)
        self.artifact = artifact

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if isinstance(args, tuple) and len(args) == 3 and args[:2] == ("inductor", "memory"):
            params = args[2]
            if isinstance(params, dict) and isinstance(params.get("orm"), dict):
                import json

                log_artifact(self.artifact, json.dumps({"orm": {str(k): int(v) for k, v in params["orm"].items()}}))


@contextlib.contextmanager
def inductor_memory_estimates(artifact: str) -> Iterator[None]:
    """Record Inductor's peak-memory estimates for the duration; restore the logger after.

    Inductor's ``reorder_for_peak_memory`` (torch/_inductor/memory.py; on by default in 2.11-2.15,
    ``config.reorder_for_peak_memory``) estimates each graph's peak for several node orders and reports
    them only through ``signpost_event("inductor", "memory", {"orm": {method: bytes}})``, which open-source
    torch logs at INFO on the ``torch._utils_internal`` logger (no structured-trace artifact).
    """
    logger = logging.getLogger("torch._utils_internal")
    handler = _SignpostHandler(artifact)
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        # INFO for tcinspect's handler only: the user's own handlers did not ask for these records
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


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


class ProfiledEvent:
    """One event of a finished torch.profiler run as plain data, with its parent and children.

    ``kind``: "op" (an ATen op, a ``record_function`` span, an autograd node), "py" (a Python call, recorded
    under ``with_stack=True``) or "other" (device activity, allocations). A Python call's ``caller`` is the
    frame that made it, at the line it made it: (file, line, function); a call of a Python function also has
    its ``callsite`` (file, first line, function) and, for an ``nn.Module`` call, ``module_id`` (``id()``).
    """

    __slots__ = ("caller", "callsite", "children", "correlation_id", "end_ns", "kind", "module_id", "name", "parent",
                 "sequence_nr", "start_ns")

    def __init__(self, kind: str, name: str, start_ns: int, end_ns: int, parent: Optional[ProfiledEvent]) -> None:
        self.kind, self.name, self.start_ns, self.end_ns, self.parent = kind, name, start_ns, end_ns, parent
        self.correlation_id, self.sequence_nr, self.module_id = 0, -1, 0
        self.caller: Optional[tuple[str, int, str]] = None
        self.callsite: Optional[tuple[str, int, str]] = None
        self.children: list[ProfiledEvent] = []


def profiled_events(prof: Any) -> list[ProfiledEvent]:
    """The roots of a finished ``torch.profiler.profile``'s event tree (ops, spans and, with ``with_stack``,
    Python calls, nested as they ran on each thread).

    ``prof.profiler.kineto_results.experimental_event_tree()`` (torch._C._profiler, 2.11-2.15): ``_ProfilerEvent``
    with ``tag`` (_EventType.TorchOp, PyCall, PyCCall, ...), ``children`` and ``extra_fields``: a TorchOp's
    ``sequence_number`` (its autograd node's, -1 if none), a Python call's ``caller`` (``_PyFrameState``: the
    calling frame's file_name, line_number and function_name when the call was made), a PyCall's ``callsite``
    (the called function, at its first line) and ``module`` (``_NNModuleInfo.self_ptr``, the module's id())
    where an nn.Module was called. ``FunctionEvent.stack`` holds only the functions' first lines; the callers'
    lines are read here.
    """
    from torch._C._profiler import _EventType

    absolute = _tracer_file_resolver()

    def frame(state: Any) -> Optional[tuple[str, int, str]]:
        if state is None:
            return None
        return absolute(str(state.file_name)), int(state.line_number), str(state.function_name)

    roots: list[ProfiledEvent] = []
    todo: list[tuple[Any, Optional[ProfiledEvent]]] = [(e, None) for e in reversed(
        prof.profiler.kineto_results.experimental_event_tree())]
    while todo:  # iterative: Python stacks nest deeper than the recursion limit allows for
        raw, parent = todo.pop()
        tag = raw.tag
        kind = "op" if tag == _EventType.TorchOp else "py" if tag in (_EventType.PyCall, _EventType.PyCCall) else "other"
        event = ProfiledEvent(kind, str(raw.name), int(raw.start_time_ns), int(raw.end_time_ns), parent)
        extra = raw.extra_fields
        if kind == "op":
            event.correlation_id = int(raw.correlation_id)
            event.sequence_nr = int(getattr(extra, "sequence_number", -1))
        elif kind == "py":
            event.caller = frame(getattr(extra, "caller", None))
            if tag == _EventType.PyCall:
                event.callsite = frame(getattr(extra, "callsite", None))
                module = getattr(extra, "module", None)
                event.module_id = int(module.self_ptr) if module is not None else 0
        (parent.children if parent is not None else roots).append(event)
        todo.extend((child, event) for child in reversed(raw.children))
    return roots


def _tracer_file_resolver() -> Callable[[str], str]:
    """Maps the file names torch's Python tracer records back to paths.

    The tracer names a file relative to the longest of sys.path, the site-packages directories and torch's
    parent directory it lies under (``torch/nn/modules/module.py``, ``model.py``), from a list it reads once
    per process (torch/profiler/python_tracer.py ``_prefix_regex``, 2.11-2.15). The same list, read now, and
    the working directory find the file; a name no prefix makes a file of (``<eval_with_key>.3``) stays.
    """
    try:
        from torch.profiler.python_tracer import _prefix_regex

        prefixes = list(_prefix_regex())
    except (ImportError, AttributeError):
        prefixes = []
    prefixes.append(os.getcwd() + os.sep)
    known: dict[str, str] = {}
    # the files of the modules this process loaded: a name two prefixes make a file of (two checkouts of one
    # package on sys.path) is the one that ran
    loaded = [f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)]

    def absolute(name: str) -> str:
        if name not in known:
            found = name
            if name and not name.startswith("<") and not os.path.isabs(name):
                ran = {f for f in loaded if f.endswith(os.sep + name)}
                on_path = [p + name for p in prefixes if os.path.isfile(p + name)]
                found = next((f for f in on_path if f in ran), None) or \
                    (next(iter(ran)) if len(ran) == 1 else (on_path[0] if on_path else name))
            known[name] = found
        return known[name]

    return absolute


def refused_to_compile(exc: BaseException) -> bool:
    """Whether ``exc`` is Dynamo refusing a compile under ``torch.compiler.set_stance("fail_on_recompile")``: a plain
    RuntimeError raised by the stance's ``fail_callback`` in torch/_dynamo/eval_frame.py (2.11-2.15)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].name == "fail_callback" and "_dynamo" in frames[-1].filename


@dataclasses.dataclass(frozen=True)
class Bisection:
    """torch's CompilerBisector's answer (its BisectionResult), with what the subsystem it names is."""

    backend: str
    subsystem: str = ""
    bisect_number: Optional[int] = None
    debug_info: str = ""
    #: for a subsystem that is one config change: "torch._inductor.config.emulate_precision_casts=True"
    config_change: str = ""


class BisectRun(NamedTuple):
    """What one run under the bisector tried: the backend, the subsystem and its run state (or "")."""

    backend: str
    subsystem: str
    state: str


def compiler_bisect(fn: Callable[[BisectRun], bool], keep_custom_backend: bool = False) -> tuple[Optional[Bisection], str]:
    """torch._inductor.compiler_bisector.CompilerBisector.do_bisect(fn) in this process (2.11-2.15): fn compiles
    with torch.compile and says whether the result matches (it is told what the bisector is trying). The bisector
    runs eager, aot_eager, aot_eager_decomp_partition and inductor in turn (replacing torch.compile's backend),
    then, in the first that fails, disables its subsystems one by one and bisects the applications of the one that
    fixes it. ``keep_custom_backend``: a callable backend stays for its inductor runs (where torch has the option),
    so a user's passes still run. Returns the answer and what the bisector printed."""
    from torch._inductor import config as inductor_config
    from torch._inductor.compiler_bisector import BACKENDS, CompilerBisector, ConfigChange

    def run() -> bool:
        backend = CompilerBisector.get_backend() or ""
        subsystem = CompilerBisector.get_subsystem() or ""
        state = CompilerBisector.get_run_state(backend, subsystem) or "" if backend and subsystem else ""
        return fn(BisectRun(backend, subsystem, state))

    patch: dict[str, Any] = {}
    if keep_custom_backend and hasattr(inductor_config.test_configs, "bisect_keep_custom_backend_for_inductor"):
        patch["test_configs.bisect_keep_custom_backend_for_inductor"] = True
    printed = io.StringIO()
    with inductor_config.patch(patch), contextlib.redirect_stdout(printed):
        try:
            result = CompilerBisector.do_bisect(run)
        finally:
            import gc

            gc.collect()  # do_bisect's cleanup runs (and prints) when its local object is collected
    if result is None:
        return None, printed.getvalue()
    change = ""
    for s in BACKENDS.get(result.backend, []):
        if s.name == result.subsystem and isinstance(s, ConfigChange):
            # the config each backend applies it to (torch/__init__.py's inductor wrapper, debugging.py's
            # aot_eager_decomp_partition: functorch's config)
            module = {"inductor": "torch._inductor.config",
                      "aot_eager_decomp_partition": "torch._functorch.config"}.get(s.config_name, s.config_name)
            change = f"{module}.{s.config_field}={s.config_value!r}"
    return Bisection(result.backend, result.subsystem or "", result.bisect_number,
                     str(result.debug_info or ""), change), printed.getvalue()


#: The debug logs of CUDA graphs under graph partitioning (the ``cudagraphs`` artifact, 2.11-2.15): the scheduler
#: logs each graph's partitions as it splits the graph (Scheduler._log_graph_partitions, DEBUG, GPU graphs only),
#: CUDA graph trees each recording ("Recording function=partition_0, ...") and re-recording (with its reason).
PARTITION_LOGGER = "torch._inductor.scheduler.__cudagraphs"
TREES_LOGGER = "torch._inductor.cudagraph_trees.__cudagraphs"
_OP_PARTS = re.compile(r"^reason=(?P<reason>.*?), ir=(?P<ir>[^,]*)(?:, fx=(?P<fx>.*))?$", re.S)
_RECORDING = re.compile(r"Recording function=(?P<fn>[^,\s]+).*?cuda_graph_id=(?P<id>\d+)")
_RE_RECORDING = re.compile(r"Re-recording function=(?P<fn>[^,\s]+),(?: mode=[^,]*,)? reason=(?P<reason>.*)", re.S)


class PartitionLog(logging.Filter):
    """What torch's ``cudagraphs`` debug logs say while a capture runs under a CUDA-graph mode: each graph's
    partitions (taken by the capture with ``take`` when that graph's output code is logged) and each recording
    (``on_recording(record)``). As a filter on those loggers, at DEBUG for the duration: it passes on only the
    records the logger's own level would have, so the user's log output is what it was."""

    def __init__(self, on_recording: Callable[[dict[str, Any]], None], keep: dict[str, int]) -> None:
        super().__init__()
        self.on_recording = on_recording
        self.keep = keep  # logger name -> the level it had: records below it are tcinspect's alone
        self.pending: Optional[dict[str, Any]] = None
        self.rerecording: dict[str, str] = {}  # function -> torch's reason, until its recording

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            if record.name == PARTITION_LOGGER:
                self._partitions(record)
            elif record.name == TREES_LOGGER:
                self._recording(record)
        except Exception:  # noqa: BLE001 - a record torch words differently is not tcinspect's to raise
            pass
        return record.levelno >= self.keep.get(record.name, logging.WARNING)

    def take(self) -> Optional[dict[str, Any]]:
        """The partitions the scheduler logged for the graph being compiled (None: it logged none)."""
        got, self.pending = self.pending, None
        return got

    def _partitions(self, record: logging.LogRecord) -> None:
        msg = str(record.msg)
        args: tuple[Any, ...] = record.args if isinstance(record.args, tuple) else ()
        if msg.startswith("Created %d graph partitions"):
            self.pending = {"created": record.getMessage(), "partitions": []}
        elif self.pending is None:
            return
        elif msg.startswith("  Partition %d: %d nodes") and len(args) >= 5:
            index, nodes, kind, inputs, outputs = args[:5]
            self.pending["partitions"].append({"index": int(index), "nodes": int(nodes),
                                               "cudagraphable": kind == "cudagraphable", "inputs": int(inputs),
                                               "outputs": int(outputs), "ops": []})
        elif msg == "    %s: %s" and len(args) == 2 and self.pending["partitions"]:
            m = _OP_PARTS.match(str(args[1]))
            if m:
                self.pending["partitions"][-1]["ops"].append(
                    {"node": str(args[0]), "reason": m["reason"], "ir": m["ir"], "fx": m["fx"] or "", "stack": []})
        elif msg == "         %s" and len(args) == 1 and self.pending["partitions"]:
            ops = self.pending["partitions"][-1]["ops"]
            if ops:
                ops[-1]["stack"].append(str(args[0]))

    def _recording(self, record: logging.LogRecord) -> None:
        msg = str(record.msg)
        if "Re-recording function=" in msg:
            m = _RE_RECORDING.search(record.getMessage())
            if m:
                self.rerecording[m["fn"]] = m["reason"].strip()
        elif "Recording function=" in msg:
            m = _RECORDING.search(record.getMessage())
            if not m:
                return
            compile_id, part, function_id = _recording_owner(sys._getframe(1))
            self.on_recording({"compile_id": compile_id, "part": part, "function": m["fn"],
                               "function_id": function_id, "cuda_graph_id": int(m["id"]),
                               "rerecord_reason": self.rerecording.pop(m["fn"], "")})


def _recording_owner(frame: Optional[FrameType]) -> tuple[str, str, int]:
    """The compile id, graph (forward/backward/inference) and FunctionID of a recording being logged: the caller is
    CUDAGraphTreeManager.record_function(new_inputs, function_id), whose ``compile_id`` and ``id_to_mode`` say
    (2.11-2.15); a FunctionID is one function at one key of its int inputs."""
    compile_id, part = _cudagraph_owner(frame)
    while frame is not None:
        fid = frame.f_locals.get("function_id")
        if fid is not None and hasattr(fid, "id"):
            return compile_id, part, int(fid.id)
        frame = frame.f_back
    return compile_id, part, -1


@contextlib.contextmanager
def cudagraph_partition_log(on_recording: Callable[[dict[str, Any]], None]) -> Iterator[PartitionLog]:
    """torch's partition and recording debug logs for the duration (``PartitionLog``), the loggers' levels restored."""
    loggers = [logging.getLogger(name) for name in (PARTITION_LOGGER, TREES_LOGGER)]
    saved = [lg.level for lg in loggers]
    log = PartitionLog(on_recording, {lg.name: lg.getEffectiveLevel() for lg in loggers})
    for lg in loggers:
        lg.addFilter(log)
        lg.setLevel(logging.DEBUG)
    try:
        yield log
    finally:
        for lg, level in zip(loggers, saved):
            lg.removeFilter(log)
            lg.setLevel(level)
