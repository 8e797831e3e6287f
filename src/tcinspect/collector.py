"""Python's cycle collector paused while a large structure that holds no garbage is built or read."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off for the block, then as it was (on or off), also when the block raises.

    What such a block makes (a report's million objects, the parts of a directory of rank logs) is freed by
    reference counting; the collector's passes over it find nothing and took a third of reading a 16-layer Llama
    report and a quarter of reading 32 ranks of a 12-layer GPT-2's log."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def finish_before_exit() -> None:
    """Python's exit, begun here: what it runs then runs now, in its order, and the heap left is frozen, so that the
    interpreter's finalization frees it by reference counting without the collector's passes over it. Only where
    the process ends next (the ``__main__`` of a capture's process): a process that went on could start no thread.

    As the interpreter's exit does: the threads that are not daemons are waited for (``threading._shutdown``, which
    first tells thread pools to stop), then the ``atexit`` callbacks run. Then one collection frees what they kept
    alive: a file the model file left open is flushed and closed, an object's ``__del__`` runs. Then ``gc.freeze()``:
    the exit still clears every module and frees what each held, but no longer walks the objects torch and a compile
    made for cycles, a walk that took 2.0-2.6 s of a 9-12 s capture of a tiny model on two cores (a process that
    imported torch and compiled; a bare ``torch.compile`` pays it too). Where this Python lacks either private hook, or
    an extension built with nanobind is loaded (Triton 3.9's, which torch 2.15 imports), it does nothing and the exit
    is Python's own: nanobind counts its objects still alive as its module is finalized and prints a "leaked
    instances" report for those a frozen heap kept.
    """
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    run_exit_callbacks = getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or run_exit_callbacks is None or _nanobind_loaded():
        return
    shutdown()
    run_exit_callbacks()  # each runs once: the exit finds none left
    gc.collect()
    gc.freeze()


def _nanobind_loaded() -> bool:
    """Whether a loaded extension module (or one of the submodules it made) defines a type of nanobind's."""
    import sys
    from types import ModuleType

    for module in list(sys.modules.values()):
        if not str(getattr(module, "__file__", "") or "").endswith((".so", ".pyd")):
            continue
        todo, depth = [module], 0
        while todo and depth < 3:
            inner = []
            for m in todo:
                for value in list(vars(m).values()):
                    if isinstance(value, type) and type(value).__module__ == "nanobind":
                        return True
                    if isinstance(value, ModuleType) and not getattr(value, "__file__", None):
                        inner.append(value)  # nanobind's def_submodule: no file of its own
            todo, depth = inner, depth + 1
    return False
