"""torch's structured trace and its loggers: where the recorder listens, what a capture logs there, what it quiets.

Touches the structured-trace logger ``torch.__trace`` (torch/_logging/_internal.py's ``trace_log``, the source of
TORCH_TRACE and tlparse) and the handlers torch installs on its component loggers; ``trace_structured``, which logs
tcinspect's own artifacts under the compile id being compiled; torch/_logging/structured.py's intern table (the file
names of stack frames in trace records); the ``torch._utils_internal`` logger Inductor's peak-memory signposts go to.
Each context manager restores what it changed. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

#: The structured-trace logger (torch/_logging/_internal.py: ``trace_log``). It never
#: propagates; trace_structured() emits only while it has a handler (2.11-2.15).
TRACE_LOGGER_NAME = "torch.__trace"


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


def log_artifact(name: str, payload: str) -> None:
    """Log a JSON artifact on the structured trace, under the compile id being compiled.

    trace_structured attaches the current compile id itself (torch/_logging/_internal.py, 2.11-2.15),
    so tcinspect's own records land beside PyTorch's for the same graph.
    """
    from torch._logging import trace_structured

    trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "json"}, payload_fn=lambda: payload)


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
