"""Inductor's caches: the directory they resolve to, and a fresh, private one for a cold compile (``--fresh``).

Touches TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR (read on each cache access:
torch/_inductor/runtime/cache_dir_utils.py), the in-memory code caches of torch._inductor.codecache, and
``cache_dir()``: where the output code a compile wrote lies, and where earlier versions of tcinspect kept their
records. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any


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


def inductor_cache_dir() -> str:
    """Inductor's cache directory as it resolves now (TORCHINDUCTOR_CACHE_DIR or the default under
    the temp dir; torch/_inductor/runtime/cache_dir_utils.py, 2.11-2.15)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return str(cache_dir())
