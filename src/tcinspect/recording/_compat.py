"""Every private torch access tcinspect makes, in one place, version by version.

Supported: torch 2.11 (the GPU machines) to 2.14. Each function names what it touches and why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import traceback
from typing import Any, Callable, Iterator

import torch

#: The structured-trace logger (torch/_logging/_internal.py: ``trace_log``). It never
#: propagates; trace_structured() emits only while it has a handler (2.11-2.14).
TRACE_LOGGER_NAME = "torch.__trace"


def torch_version() -> str:
    return str(torch.__version__)


@contextlib.contextmanager
def trace_handler(handler: logging.Handler) -> Iterator[None]:
    """Attach ``handler`` to the structured-trace logger for the duration; restore it after."""
    logger = logging.getLogger(TRACE_LOGGER_NAME)
    old_level = logger.level
    logger.addHandler(handler)
    # trace_log is created at DEBUG; someone may have raised it (2.11-2.14 all check level)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """Silence torch's own log output (the "torch" logger's handlers) for the duration.

    torch installs stderr handlers on "torch" and on each registered component logger
    ("torch._dynamo", "torch._subclasses.fake_tensor", ...) at import (torch/_logging/_internal.py,
    2.11-2.14) and logs e.g. fake-tensor errors there; the report already holds what they say.
    The structured-trace logger keeps its handlers, so recording is unaffected.
    """
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if (name == "torch" or name.startswith("torch.")) and name != TRACE_LOGGER_NAME]
    handlers = list(dict.fromkeys(h for lg in loggers for h in lg.handlers))
    drop = _DropAll()
    for h in handlers:
        h.addFilter(drop)
    try:
        yield
    finally:
        for h in handlers:
            h.removeFilter(drop)


def reset_dynamo() -> None:
    """Forget compiled frames and counters (torch._dynamo.reset, public since 2.0)."""
    torch._dynamo.reset()


@contextlib.contextmanager
def private_inductor_cache() -> Iterator[str]:
    """A fresh, empty Inductor/Triton cache directory: a cold compile (``--fresh``).

    TORCHINDUCTOR_CACHE_DIR is read on each cache access (torch._inductor.runtime.cache_dir_utils,
    2.11-2.14); the in-memory caches are cleared too so that nothing warm survives in-process.
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
    # code caches below exist with cache_clear() in 2.11-2.14.
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
    """The exception a backend raised, unwrapped from BackendCompilerFailed (``inner_exception``, 2.11-2.14)."""
    inner = getattr(exc, "inner_exception", None)
    return inner if isinstance(inner, BaseException) else exc


def compile_fn(model: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """torch.compile, public API; kwargs pass through unchanged."""
    return torch.compile(model, **kwargs)


def inductor_config_snapshot() -> dict[str, Any]:
    """Inductor's config as a dict (torch._inductor.config.save_config_portable, 2.11-2.14)."""
    from torch._inductor import config

    return dict(config.get_config_copy())


def dynamo_config_snapshot() -> dict[str, Any]:
    return dict(torch._dynamo.config.get_config_copy())
