"""What torch's CUDA graph debug logs say: each skip and, under graph partitioning, each graph's partitions and each
recording.

Touches the ``cudagraphs`` artifact loggers of torch/_inductor/cudagraph_utils.py, cudagraph_trees.py and
scheduler.py (their records' format strings), the frames that log to them (CUDAGraphTreeManager's compile id,
FunctionID and modes; the current CompileContext), and torch.compiler.cudagraph_mark_step_begin. The loggers'
handlers, filters and levels are restored after. Supported: torch 2.11 to 2.15.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Optional

import torch

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
