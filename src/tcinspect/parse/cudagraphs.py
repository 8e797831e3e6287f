"""CUDA graphs under ``mode="reduce-overhead"``: what each compiled graph did, from torch's own records.

Where torch records it (read in torch 2.11 on an H100 and in 2.13's source):

- a recording: the ``CUDAGraphNode.record`` span (``dynamo_timed`` in ``_inductor/cudagraph_trees.py``, a
  ``chromium_event`` with ``compile_id`` and ``is_backward``), one per CUDA graph recorded, re-recordings
  included; ``runtime_cudagraphify_time_us`` in ``compilation_metrics_runtime`` (``bwd_`` for backward) sums
  torch's time wrapping and recording;
- a skip: ``log_cudagraph_skip_and_bump_counter`` (``_inductor/cudagraph_utils.py``), a warning on the
  ``cudagraphs`` log and ``counters["inductor"]["cudagraph_skips"]``. A skip decided while compiling also
  lands in that compile's ``cudagraph_skip_reason`` (compilation_metrics); one decided when the graph first
  runs (mutated inputs under CUDA graph trees) is on the log alone, so the capture logs it on the trace as
  ``tcinspect_cudagraph_skip`` with the compile id and graph it belongs to. A TORCH_TRACE log has only the
  former: said in ``CudaGraphs.notes``;
- graph partitions (``graph_partition``, torch's default outside fbcode): Inductor splits a graph around what cannot
  be CUDA-graphed and CUDA-graphs each other partition on its own. The scheduler says so on the ``cudagraphs``
  debug log alone ("Created 3 graph partitions: 2 cudagraphable, 1 non-cudagraphable", each partition, each op
  that cannot be captured with torch's reason and stack), which a capture keeps as ``tcinspect_cudagraph_partitions``
  beside the graph's output code; the output code itself has the cudagraphable partitions as functions
  (``def partition_0``, ``Runner(partitions=[partition_0, ...])``) and runs the rest inline in ``Runner.call``, which
  is all a TORCH_TRACE log holds. Each recording of a partition is a "Recording function=partition_0, ..." debug line
  of CUDA graph trees (``tcinspect_cudagraph_recording``, with the FunctionID and any re-record reason). A graph with
  no cudagraphable partition is captured by nothing, and torch then logs no skip and bumps no counter
  (``cudagraph_partition_post_compile``, 2.11-2.15): here it is a skip, with the reasons of its ops.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from tcinspect.parse.events import (
    CUDAGRAPH_PARTITIONS_ARTIFACT,
    CUDAGRAPH_RECORDING_ARTIFACT,
    CUDAGRAPH_SKIP_ARTIFACT,
    Event,
    compact_span,
)
from tcinspect.parse.inductor import part_of
from tcinspect.report import (
    CudaGraphPartition,
    CudaGraphRecording,
    CudaGraphs,
    CudaGraphUse,
    Options,
    OutputCode,
    PartitionOp,
    PartitionRecording,
    Stages,
)

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: tcinspect's record of a skip torch logged (capturing/_compat/cudagraphs.py: cudagraph_skip_log)
SKIP_ARTIFACT = CUDAGRAPH_SKIP_ARTIFACT
#: tcinspect's records of a graph's partitions and of each recording (capturing/_compat/cudagraphs.py: PartitionLog)
PARTITIONS_ARTIFACT = CUDAGRAPH_PARTITIONS_ARTIFACT
RECORDING_ARTIFACT = CUDAGRAPH_RECORDING_ARTIFACT
#: what output code that Inductor partitioned holds (codegen/wrapper.py: the Runner of the partition functions)
PARTITIONED = "Runner(partitions=["
_RUNNER = re.compile(r"^runner = Runner\(partitions=\[(?P<fns>[^\]]*)\]\)", re.M)
_PARTITION_CALL = re.compile(r"self\.partitions\[(\d+)\]\(")
_STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
#: where torch's reason says nothing was captured (a graph with no cudagraphable partition)
NO_PARTITION = "nothing captured: no cudagraphable partition"
SILENT_NOTE = ("a graph with no cudagraphable partition is captured by nothing, and torch logs no skip for it (nor "
               "counts one in cudagraph_skips): it shows as skipped here, with the reasons torch's scheduler gave")
OUTPUT_CODE_NOTE = ("partitions are read from the output code alone (a TORCH_TRACE log, or a cache entry tcinspect "
                    "has no record of): torch states why a partition cannot be CUDA-graphed on its cudagraphs debug "
                    "log only; a capture (--fresh) shows the reasons and each partition's recordings")
#: torch.compile modes that turn Inductor's CUDA graphs on (torch/_inductor/__init__.py list_mode_options)
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
RECORD_SPAN = "CUDAGraphNode.record"
_PARTS = ("forward", "inference", "backward")
_PREFIX = re.compile(r"^skipping cudagraphs? due to\s*")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
LOG_NOTE = ("a TORCH_TRACE log holds the skips torch decided while compiling (compilation_metrics' "
            "cudagraph_skip_reason), not those decided when a graph first ran (mutated inputs under CUDA graph "
            "trees): a live capture shows those")


def skip_record(message: str, compile_id: str, part: str) -> dict[str, str]:
    """The payload of a ``tcinspect_cudagraph_skip`` event."""
    return {"message": message, "compile_id": compile_id, "part": part}


def _reason(message: str) -> tuple[str, tuple[str, ...]]:
    """torch's skip message -> (the reason, the user lines of its "Found from" stack)."""
    head, _, stack = message.partition(". Found from")
    lines = tuple(dict.fromkeys(f"{f}:{n}" for f, n in _FRAME.findall(stack)))
    reason = head.strip()
    while _PREFIX.match(reason):  # torch 2.11 can say it twice ("skipping cudagraphs due to skipping ...")
        reason = _PREFIX.sub("", reason, count=1)
    return reason, lines


def build(events: Sequence[Event], options: Options, stages: Stages, device: str,
          from_log: bool = False) -> Optional[CudaGraphs]:
    """The CUDA graph section of a run; None when nothing says CUDA graphs were on."""
    parts: dict[str, set[str]] = {}  # compile id -> its graphs that Inductor compiled
    for out in stages.inductor.outputs:
        parts.setdefault(out.compile_id, set()).add(out.part)
    recordings: dict[tuple[str, str], list[CudaGraphRecording]] = {}
    cudagraphify_us: dict[tuple[str, str], float] = {}
    skips: dict[tuple[str, str], list[str]] = {}
    partitioned: dict[tuple[str, str], dict[str, Any]] = {}  # (compile id, graph) -> the scheduler's record
    partition_recordings: dict[tuple[str, str], list[dict[str, Any]]] = {}
    logged = 0
    open_spans: dict[tuple[str, str], list[tuple[float, int]]] = {}

    def side(cid: str, backward: Any) -> str:
        if backward is True or backward == "backward":
            return "backward"
        if backward == "inference":
            return "inference"
        # not backward: an inference graph where the compile made one and no forward (torch's is_backward
        # and CompilationMode say forward for both at compile time)
        return "inference" if "inference" in parts.get(cid, set()) and "forward" not in parts.get(cid, set()) \
            else "forward"

    for ev in events:
        if ev.name == "chromium_event":
            span = compact_span(ev.meta, ev.payload)
            if span.get("name") != RECORD_SPAN:
                continue
            args = span.get("args") or {}
            cid = str(args.get("compile_id") or ev.compile_id or "")
            key = (cid, side(cid, args.get("is_backward")))
            if span.get("ph") == "B":
                open_spans.setdefault(key, []).append((float(span.get("ts") or 0.0), ev.call))
            elif span.get("ph") == "E" and open_spans.get(key):
                start, call = open_spans[key].pop(0)
                seconds = round((float(span.get("ts") or 0.0) - start) / 1e6, 6)
                recordings.setdefault(key, []).append(CudaGraphRecording(call, seconds))
        elif ev.name in ("compilation_metrics_runtime", "bwd_compilation_metrics_runtime"):
            us = ev.meta.get("runtime_cudagraphify_time_us")
            cid = str(ev.meta.get("compile_id") or ev.compile_id)
            if isinstance(us, (int, float)) and cid:
                key = (cid, "backward" if ev.name.startswith("bwd") else side(cid, False))
                cudagraphify_us[key] = cudagraphify_us.get(key, 0.0) + float(us)
        elif ev.name in ("compilation_metrics", "bwd_compilation_metrics"):
            msg = ev.meta.get("cudagraph_skip_reason")
            cid = str(ev.meta.get("compile_id") or ev.compile_id)
            if isinstance(msg, str) and msg:
                key = (cid, "backward" if ev.name.startswith("bwd") else side(cid, False))
                if msg not in skips.get(key, []):
                    skips.setdefault(key, []).append(msg)
        elif ev.name == PARTITIONS_ARTIFACT:
            try:
                rec = json.loads(ev.payload)
                key = (str(rec.get("compile_id") or ev.compile_id or ""), part_of(str(rec["aot_id"])))
                partitioned[key] = rec
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        elif ev.name == RECORDING_ARTIFACT:
            try:
                rec = json.loads(ev.payload)
                cid = str(rec.get("compile_id") or ev.compile_id or "")
                partition_recordings.setdefault((cid, side(cid, rec.get("part") or False)), []).append(
                    {**rec, "call": ev.call})
            except (ValueError, TypeError, AttributeError):
                continue
        elif ev.name == SKIP_ARTIFACT:
            try:
                rec = json.loads(ev.payload)
                msg, cid, part = str(rec["message"]), str(rec.get("compile_id") or ""), str(rec.get("part") or "")
            except (ValueError, TypeError, KeyError):
                continue  # counted as not understood (unreadable below)
            logged += 1
            key = (cid, side(cid, part) if cid else part)
            if msg not in skips.get(key, []):
                skips.setdefault(key, []).append(msg)

    on = options.mode in CUDAGRAPH_MODES
    if not (on or recordings or skips):
        return None
    notes: list[str] = []
    if not device.startswith("cuda"):
        notes.append(f"CUDA graphs capture CUDA work only, and this run's graphs ran on {device or 'cpu'}: nothing "
                     "was recorded (run on a GPU with --device cuda to see them)")
    elif from_log:
        notes.append(LOG_NOTE)
    keys = sorted({(o.compile_id, o.part) for o in stages.inductor.outputs} | set(recordings) | set(skips),
                  key=lambda k: (_order(k[0]), _PARTS.index(k[1]) if k[1] in _PARTS else len(_PARTS)))
    outputs = {(o.compile_id, o.part): o for o in stages.inductor.outputs}
    uses = []
    for key in keys:
        recs = tuple(recordings.get(key, ()))
        msgs = skips.get(key, [])
        reasons = [_reason(m) for m in msgs]
        output = outputs.get(key)
        splits, source = partitions(output, partitioned.get(key), partition_recordings.get(key, []))
        reason = "; ".join(r for r, _ in reasons)
        lines = tuple(dict.fromkeys(line for _, lines in reasons for line in lines))
        status = "skipped" if msgs and not recs else "recorded" if recs else "not recorded"
        if splits and not any(p.cudagraphable for p in splits) and not recs:
            status = "skipped"  # nothing captured, and torch logged no skip (pytorch#193044)
            why = ", ".join(dict.fromkeys(r for p in splits for r in p.reasons))
            reason = "; ".join(x for x in (reason, NO_PARTITION + (f" ({why})" if why else "")) if x)
            lines = tuple(dict.fromkeys((*lines, *(line for p in splits for line in p.user_lines))))
        kernels = len(output.kernels) if output is not None else 0
        inside = 0
        if status == "recorded":
            inside = sum(len(p.kernel_indices) for p in splits if p.cudagraphable) if splits else kernels
        uses.append(CudaGraphUse(
            compile_id=key[0], part=key[1], status=status, reason=reason, user_lines=lines,
            recordings=recs, cudagraphify_time_s=round(cudagraphify_us.get(key, 0.0) / 1e6, 6),
            partitions=splits, partitions_from=source, kernels=kernels, kernels_in_cudagraphs=inside))
    if any(u.reason.startswith(NO_PARTITION) or f"; {NO_PARTITION}" in u.reason for u in uses):
        notes.append(SILENT_NOTE)
    if any(u.partitions_from == "output code" for u in uses):
        notes.append(OUTPUT_CODE_NOTE)
    if not device.startswith("cuda") and not uses:
        return CudaGraphs(notes=tuple(notes))
    unlogged = sum(1 for u in uses if u.reason.startswith(NO_PARTITION))
    return CudaGraphs(graphs=tuple(uses), skips=logged or sum(len(v) for v in skips.values()), notes=tuple(notes),
                      unlogged_skips=unlogged)


def unreadable(events: Sequence[Event]) -> int:
    """tcinspect_cudagraph_skip records whose payload could not be read."""
    bad = 0
    for ev in events:
        if ev.name == SKIP_ARTIFACT:
            try:
                rec = json.loads(ev.payload)
                str(rec["message"])
            except (ValueError, TypeError, KeyError):
                bad += 1
    return bad


def _order(cid: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in cid.lstrip("!").split("/"))
    except ValueError:
        return (1 << 30,)


def partitions(output: Optional[OutputCode], record: Optional[dict[str, Any]],
               recorded: Sequence[dict[str, Any]]) -> tuple[tuple[CudaGraphPartition, ...], str]:
    """A graph's partitions and where they were read from ("scheduler", "output code", or "" when it has none): the
    scheduler's record where the capture kept it, else the output code's partition functions; each cudagraphable
    one with its kernels and recordings, each other one with the kernels its code runs inline."""
    wrapper = output.wrapper if output is not None else ""
    if record is None and PARTITIONED not in wrapper:
        return (), ""
    places = _places(output) if output is not None else []

    def kernels_of(fn: str, segment: int = -1) -> tuple[int, ...]:
        return tuple(i for i, (f, s) in enumerate(places) if f == fn and (segment < 0 or s == segment))

    by_function: dict[str, list[dict[str, Any]]] = {}
    for r in recorded:
        by_function.setdefault(str(r.get("function") or ""), []).append(r)
    out: list[CudaGraphPartition] = []
    if record is not None:
        k = 0
        for p in record.get("partitions") or []:
            index = int(p.get("index", len(out)))
            if p.get("cudagraphable"):
                fn = f"partition_{k}"
                out.append(CudaGraphPartition(index=index, cudagraphable=True, function=fn, nodes=int(p.get("nodes", 0)),
                                              kernel_indices=kernels_of(fn),
                                              recordings=_recordings(by_function.get(fn, []))))
                k += 1
            else:
                ops = tuple(_op(o) for o in p.get("ops") or [])
                out.append(CudaGraphPartition(
                    index=index, cudagraphable=False, nodes=int(p.get("nodes", 0)),
                    reasons=tuple(dict.fromkeys(o.reason for o in ops)), ops=ops,
                    user_lines=tuple(dict.fromkeys(line for o in ops for line in o.user_lines)),
                    kernel_indices=kernels_of("call", k)))
        return tuple(out), "scheduler"
    m = _RUNNER.search(wrapper)
    names = [n.strip() for n in (m["fns"] if m else "").split(",") if n.strip()]
    for k in range(len(names) + 1):
        inline = kernels_of("call", k)
        if inline:
            out.append(CudaGraphPartition(index=len(out), cudagraphable=False, kernel_indices=inline))
        if k < len(names):
            out.append(CudaGraphPartition(index=len(out), cudagraphable=True, function=names[k],
                                          kernel_indices=kernels_of(names[k]),
                                          recordings=_recordings(by_function.get(names[k], []))))
    return tuple(out), "output code"


def _places(output: OutputCode) -> list[tuple[str, int]]:
    """Where each kernel launch of the output code is, by its index in ``output.kernels``: the function it is in
    (``partition_0``, or ``call`` for ``Runner.call``) and, in ``call``, how many partitions it called before it."""
    lines: list[tuple[str, int, str]] = []  # (function, partitions called before, stripped line) per line
    fn, indent, called = "", 0, 0
    for line in output.wrapper.splitlines():
        m = re.match(r"^(\s*)def (call|partition_\d+)\(", line)
        if m:
            fn, indent, called = m.group(2), len(m.group(1)), 0
            continue
        stripped = line.strip()
        if not fn or not stripped:
            continue
        if len(line) - len(line.lstrip()) <= indent:
            fn = ""
            continue
        if fn == "call" and _PARTITION_CALL.search(stripped):
            called += 1
        lines.append((fn, called, stripped))
    places: list[tuple[str, int]] = []
    at = 0
    for kernel in output.kernels:
        place = ("", -1)
        for i in range(at, len(lines)):
            if lines[i][2] == kernel.launch:
                place, at = (lines[i][0], lines[i][1]), i + 1
                break
        places.append(place)
    return places


def _op(o: dict[str, Any]) -> PartitionOp:
    stack = "\n".join(str(x) for x in o.get("stack") or [])
    lines = tuple(dict.fromkeys(f"{f}:{n}" for f, n in _STACK_FRAME.findall(stack)))
    return PartitionOp(node=str(o.get("node") or ""), reason=str(o.get("reason") or ""), ir=str(o.get("ir") or ""),
                       fx=str(o.get("fx") or ""), user_lines=lines[-1:])


def _recordings(recs: Sequence[dict[str, Any]]) -> tuple[PartitionRecording, ...]:
    """One partition's recordings, each after the first with its cause as torch's tree gives it."""
    out: list[PartitionRecording] = []
    seen: set[int] = set()
    for r in recs:
        fid = int(r.get("function_id", -1))
        cause = ""
        if out:
            cause = (str(r.get("rerecord_reason") or "") or ("new symint key" if fid not in seen else "recorded again"))
        seen.add(fid)
        out.append(PartitionRecording(call=int(r.get("call", -1)), cuda_graph_id=int(r.get("cuda_graph_id", -1)),
                                      cause=cause))
    return tuple(out)


def section(run: RunEvents) -> Optional[CudaGraphs]:
    """The report's section of the CUDA graph section, from a run (report/sections.py registers it)."""
    return build(run.events, run.options, run.stages, run.device, from_log=run.target.kind == "torch_trace")
