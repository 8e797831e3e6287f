"""A finished torch.profiler run's event tree as plain data: runtime coverage reads which ATen ops ran compiled and which
eagerly, and from which user line.

Touches the profiler's event tree (``kineto_results.experimental_event_tree()``, torch._C._profiler: _ProfilerEvent,
_EventType and their extra fields: an op's sequence number, a Python call's caller and callsite, an nn.Module's id)
and the prefixes torch's Python tracer strips from file names (torch/profiler/python_tracer.py); and the marker lines
Kineto writes on stderr as tcinspect's own profiler runs start and stop (``markers_dropped``). Supported: torch 2.11
to 2.15.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from typing import Any, Optional

#: The lines libkineto writes on stderr as a profiler starts and stops (torch 2.13's CPU build:
#: "USDT:2026-12-02 02:18:32 30682:30682 SyncActivityProfilerHandler.cpp:52] profiler_start"). They are Kineto's
#: USDT level, above its errors: no KINETO_LOG_LEVEL hides them but one that hides the errors too.
KINETO_MARKER = re.compile(rb"^USDT:[^\n]*\] profiler_(?:start|stop)\n", re.M)


@contextlib.contextmanager
def markers_dropped() -> Iterator[None]:
    """A profiler run of tcinspect's own (runtime coverage, --per-call, --bench) without Kineto's marker lines.

    The user's model never asked for a profiler: its output should not say that one started. Where stderr is a
    regular file that can be read back (an isolated capture's output, which its parent forwards), the lines Kineto
    wrote on it during the block are taken out again, and everything else written there stays as it was. On a
    terminal, a pipe or a file opened for appending only (a rank's log), nothing is changed."""
    fd = 2
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        start = os.lseek(fd, 0, os.SEEK_CUR) if stat.S_ISREG(os.fstat(fd).st_mode) else -1
    except (OSError, ValueError, AttributeError):  # no stderr, a closed stream, an unseekable one
        start = -1
    try:
        yield
    finally:
        if start >= 0:
            _drop_markers(fd, start)


def _drop_markers(fd: int, start: int) -> None:
    """Kineto's marker lines out of what was written on ``fd`` from ``start`` to its end (where its offset is)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end <= start or end != os.fstat(fd).st_size:
            return
        written = os.pread(fd, end - start, start)
        kept = KINETO_MARKER.sub(b"", written)
        if kept == written:
            return
        # what stays is written over the block's first bytes before the file is cut: a crash in between leaves
        # every line, some twice, and none lost
        os.pwrite(fd, kept, start)
        os.ftruncate(fd, start + len(kept))
        os.lseek(fd, start + len(kept), os.SEEK_SET)
    except (OSError, ValueError, AttributeError):  # not readable (opened for writing only), or gone
        return


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
