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
  former: said in ``CudaGraphs.notes``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Optional

from tcinspect.parse.events import CUDAGRAPH_SKIP_ARTIFACT, Event, compact_span
from tcinspect.report import CudaGraphRecording, CudaGraphs, CudaGraphUse, Options, Stages

#: tcinspect's record of a skip torch logged (capturing/_compat.py: cudagraph_skip_log)
SKIP_ARTIFACT = CUDAGRAPH_SKIP_ARTIFACT
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
    uses = []
    for key in keys:
        recs = tuple(recordings.get(key, ()))
        msgs = skips.get(key, [])
        reasons = [_reason(m) for m in msgs]
        status = "skipped" if msgs and not recs else "recorded" if recs else "not recorded"
        uses.append(CudaGraphUse(
            compile_id=key[0], part=key[1], status=status,
            reason="; ".join(r for r, _ in reasons),
            user_lines=tuple(dict.fromkeys(line for _, lines in reasons for line in lines)),
            recordings=recs, cudagraphify_time_s=round(cudagraphify_us.get(key, 0.0) / 1e6, 6)))
    if not device.startswith("cuda") and not uses:
        return CudaGraphs(notes=tuple(notes))
    return CudaGraphs(graphs=tuple(uses), skips=logged or sum(len(v) for v in skips.values()), notes=tuple(notes))


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
