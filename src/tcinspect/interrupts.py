"""SIGINT and SIGTERM end a command promptly: one line, exit 130 or 143, no child and no partial file left.

While a command runs (``handled()``), both signals raise ``errors.Interrupted`` in the main thread
and are remembered. An exception raised while Python runs a weakref callback or a ``__del__`` (torch's
caches use both) is "ignored": printed as unraisable and dropped. The unraisable hook here catches
that case, prints nothing, and delivers the signal again outside the callback. The flag is also
checked again before any output is written (``check``), and a watchdog ends the process itself if the command has not
reached the CLI's error boundary ``GRACE_S`` seconds after the signal: it kills the child process
groups and removes the temporary files registered here, prints the line, and exits. No torch import.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

from tcinspect.errors import Interrupted

#: Seconds between the signal and the watchdog's own exit, when the command did not stop by itself.
GRACE_S = 5.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: Optional[int] = None
_again = False  # the last Interrupted was dropped as unraisable: raise the next delivery again
_finished = threading.Event()
_resend = threading.Event()
_lock = threading.Lock()
_files: set[str] = set()
_cleanups: dict[int, Callable[[], None]] = {}


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


def line(signum: int) -> str:
    name = signal.Signals(signum).name
    return f"tcinspect: interrupted ({name})"


def check() -> None:
    """Raise Interrupted if a signal arrived, even one that torch swallowed."""
    if _received is not None:
        raise Interrupted(_received)


def own(path: str) -> None:
    """A temporary file that an interrupt must not leave behind."""
    _files.add(path)


def disown(path: str) -> None:
    _files.discard(path)


@contextlib.contextmanager
def cleanup(fn: Callable[[], None]) -> Iterator[None]:
    """Run ``fn`` (e.g. kill a child's process group) if the watchdog has to end the process meanwhile."""
    key = id(fn)
    _cleanups[key] = fn
    try:
        yield
    finally:
        _cleanups.pop(key, None)


def end_children() -> None:
    """Run every cleanup registered now (``cleanup``: kill a capture's child process group), for a process that ends
    while a capture runs in another thread (the MCP server, when its client leaves)."""
    for fn in list(_cleanups.values()):
        try:
            fn()
        except Exception:  # noqa: BLE001 - best effort: the process is ending
            pass


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Install the handlers for the duration of one command (only the main thread can)."""
    global _received, _again
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in _SIGNALS}
    old_hook = sys.unraisablehook
    _received, _again = None, False
    _finished.clear()
    _resend.clear()
    for s in _SIGNALS:
        signal.signal(s, _handler)
    sys.unraisablehook = _unraisable_hook(old_hook)
    try:
        yield
    finally:
        with _lock:
            _finished.set()
        sys.unraisablehook = old_hook
        for s, h in old.items():
            signal.signal(s, h)


def _handler(signum: int, frame: object) -> None:
    global _received, _again
    if _received is not None:
        if _again:  # the first was swallowed: this is its second delivery
            _again = False
            raise Interrupted(signum)
        return  # the first one is being handled; raising again could cut a cleanup short
    _received = signum
    threading.Thread(target=_watchdog, args=(signum,), name="tcinspect-interrupt", daemon=True).start()
    raise Interrupted(signum)


def _unraisable_hook(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    def hook(unraisable: Any) -> None:
        global _again
        if isinstance(unraisable.exc_value, Interrupted):
            _again = True
            _resend.set()  # the watchdog sends it again once this callback has returned
            return
        previous(unraisable)

    return hook


def _watchdog(signum: int) -> None:
    deadline = time.monotonic() + GRACE_S
    while not _finished.is_set() and (left := deadline - time.monotonic()) > 0:
        if _resend.wait(min(left, 0.05)):
            _resend.clear()
            time.sleep(0.01)  # let the hook return: a signal handled inside it would be dropped again
            if not _finished.is_set():
                signal.pthread_kill(threading.main_thread().ident or 0, signum)
    if _finished.is_set():
        return
    with _lock:
        if _finished.is_set():
            return
        for fn in list(_cleanups.values()):
            try:
                fn()
            except Exception:  # noqa: BLE001 - best effort: the process is ending
                pass
        for path in list(_files):
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            sys.stderr.write(line(signum) + "\n")
            sys.stderr.flush()
        finally:
            os._exit(exit_code(signum))
