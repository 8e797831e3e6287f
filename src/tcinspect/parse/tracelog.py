"""One TORCH_TRACE log -> events -> its report, streamed. No torch import: a log reads anywhere.

``TORCH_TRACE=/dir`` makes torch write one ``dedicated_log_torch_trace_[rank_N_]XXXX.log`` per process
(torch/_logging/_internal.py, LazyTraceHandler and TorchLogsFormatter): each record is a glog line
``V1123 07:01:04.270000 5375 torch/_inductor/compile_fx.py:1624] {json metadata}``, then its payload,
if any, as lines each starting with a tab; ``has_payload`` is the md5 of the payload text (the lines
without their tab, joined by newlines). ``{"str": [text, index]}`` records intern the file names that
``dynamo_start`` stacks name by index. tlparse (github.com/pytorch/tlparse) reads the same format.

The file is read in blocks and never held whole: one record at a time (the longest payload is the
most held at once), and only the payloads the report is built from are decoded. A directory of rank logs is
read by parse/rankpool.py, one log at a time by ``rank_log_report``, and merged by parse/merge.py.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Optional, Union, cast

from tcinspect import jsonfast
from tcinspect.derived import runs
from tcinspect.errors import TraceLogError
from tcinspect.parse import events as ev_mod
from tcinspect.parse import logfiles, memo, shapes
from tcinspect.parse.events import Event
from tcinspect.report import DdpSplit, LogOrigin, Options, Report, Target

#: torch's file name prefix (torch/_logging/_internal.py LOG_PREFIX); which files are logs: parse/logfiles.py
LOG_PREFIX = logfiles.LOG_PREFIX
#: Report.target.kind of a report read from TORCH_TRACE logs
TARGET_KIND = "torch_trace"
#: the glog prefix: level, date, time, pid, file:line], then torch's optional " [trace id]" and
#: " [__artifact]" (a "[rankN]:" before it in logs of other handlers)
_GLOG = re.compile(rb"(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^\]\n]*:\d+\](?: \[[^\]\n]*\])* ")
#: a record ends at a newline not followed by a tab (a payload line)
_RECORD_END = re.compile(rb"\n(?!\t)")
_BLOCK = 1 << 20
#: events whose payload the report reads; every other payload is checked (md5) but never decoded
_WITH_PAYLOAD = ev_mod.PARSED | {ev_mod.CHROMIUM_EVENT, ev_mod.BACKEND_INPUTS_ARTIFACT, ev_mod.PASS_ARTIFACT,
                                 ev_mod.PROVENANCE_ARTIFACT, ev_mod.PER_CALL_ARTIFACT}
_CACHE_EVENT = re.compile(r"(fx_graph|aotautograd)_cache_\w+")
#: events whose first record's logging line (the glog prefix's file:line) a log's LogOrigin keeps
ORIGIN_EVENTS = frozenset(runs.ORIGIN_EVENTS)
#: the glog prefix's fields: month, day, time, pid, the logging file:line
_PREFIX = re.compile(rb"(?:\[rank\d+\]:)?[VIWEC](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) ([^\]\n]*:\d+)\]")
#: a CUDA tensor in a guard (its dispatch keys) or in Inductor's wrapper (its device, its stream)
_CUDA = re.compile(r"DispatchKeySet\(CUDA|device\(type='cuda'|device='cuda|get_raw_stream")


@dataclass
class LogHealth:
    """What reading one log met besides records: counted, never raised (Report.parse)."""

    records: int = 0
    lines_not_understood: int = 0
    payload_mismatches: int = 0
    truncated_payloads: int = 0
    bytes_read: int = 0
    #: the file does not end with a newline: its last record was cut short
    cut_short: bool = False
    #: what the log says of the process that wrote it (``origin_of``): its first record's glog prefix, the prefix of
    #: each ``ORIGIN_EVENTS`` event's first record, the first rank a record states
    first_prefix: bytes = b""
    emitters: dict[str, bytes] = field(default_factory=dict)
    records_rank: Optional[int] = None


def is_log(path: Union[str, Path]) -> bool:
    """Whether ``path`` is a TORCH_TRACE log: torch's file name, or a first line in its format (.gz too)."""
    return Path(path).name.startswith(LOG_PREFIX) or logfiles.probe(path, want_rank=False).is_log


def _records(fh: IO[bytes], health: LogHealth) -> Iterator[tuple[bytes, bool]]:
    """Each record's bytes (header line and payload lines) and whether it is the file's last."""
    buf, p, scan = b"", 0, 0
    eof = False
    while True:
        m = _RECORD_END.search(buf, scan)
        # a newline at the very end of the block may yet be followed by a payload line
        if m is not None and (m.end() < len(buf) or eof):
            if m.start() > p:
                yield buf[p:m.start()], False
            p = scan = m.end()
            continue
        if eof:
            if p < len(buf):
                yield buf[p:], True
            return
        block = fh.read(_BLOCK)
        health.bytes_read += len(block)
        if not block:
            eof = True
            health.cut_short = not buf.endswith(b"\n")
            continue
        buf, scan = buf[p:] + block, max(len(buf) - p - 1, 0)
        p = 0


#: a record of the tensors, storages and sources Dynamo describes (about three in four records of a log), which the
#: report does not read: its header up to where its JSON's first key, the event's name, ends
_DESCRIBE = re.compile(_GLOG.pattern + rb'(?=\{"describe_(?:storage|tensor|source)":)')


def _event(record: bytes, last: bool, strings: dict[int, str], health: LogHealth) -> Optional[Event]:
    nl = record.find(b"\n")
    head = record if nl < 0 else record[:nl]
    if nl < 0 and (m := _DESCRIBE.match(head)) is not None and (described := _described(head[m.end():])) is not None:
        # what the general way below gives such a record without a payload, without building its JSON
        if not health.first_prefix:
            health.first_prefix = head[:m.end()]
        health.records += 1
        if isinstance(described.has_payload, str):  # a payload stated and none logged
            health.truncated_payloads += 1
        return None
    m = _GLOG.match(head)
    try:
        meta = jsonfast.loads(head[m.end():]) if m is not None else None
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        health.lines_not_understood += 1
        return None
    health.records += 1
    name = ev_mod.event_name(meta)
    # what the log says of its writer, in a few cheap checks on every record
    if m is not None and (not health.first_prefix or (name in ORIGIN_EVENTS and name not in health.emitters)):
        prefix = head[:m.end()]
        health.first_prefix = health.first_prefix or prefix
        if name in ORIGIN_EVENTS:
            health.emitters.setdefault(name, prefix)
    if health.records_rank is None and name[:9] != "describe_" and isinstance(meta.get("rank"), int):
        health.records_rank = meta["rank"]  # describe records go the fast way, which reads no rank
    expected = meta.get("has_payload")
    expected = expected if isinstance(expected, str) else None
    payload: Optional[bytes] = None
    text: Optional[str] = None
    if nl < 0:
        matched = expected is None
    elif name == ev_mod.CHROMIUM_EVENT:  # a span: small, and its own on every rank (its times)
        payload, matched = _checked(record[nl + 2:], expected)  # record[nl + 1] is the first line's tab
    else:
        keep = name in _WITH_PAYLOAD or _CACHE_EVENT.fullmatch(name) is not None
        matched, text = _payload(record[nl + 2:], expected, keep)
    if not matched:
        if nl < 0 or (last and health.cut_short):
            health.truncated_payloads += 1
        else:
            health.payload_mismatches += 1
    if name == "str":
        value = meta.get("str")
        if isinstance(value, list) and len(value) == 2 and isinstance(value[1], int):
            strings[value[1]] = str(value[0])
        return None
    if name in ev_mod.IGNORED:
        return None
    if name == ev_mod.CHROMIUM_EVENT and payload is not None:
        key = "artifact" if "artifact" in meta else name  # where from_record looks for the event's own metadata
        own = meta.get(key)
        compact = None if isinstance(own, dict) and "ph" in own else _compact_span(payload)
        if compact is None:
            # the span's JSON read from the bytes (not decoded to text first), kept compact as from_record keeps it
            try:
                span = jsonfast.loads_text(payload)
            except ValueError:
                span = None
            if isinstance(span, str):  # JSON text of a string is no span (compact_span would read it as JSON)
                span = None
            compact = ev_mod.compact_span(own, span)
        try:
            attempt = int(meta.get("attempt") or 0)
        except (TypeError, ValueError):
            health.lines_not_understood += 1
            return None
        # the Event from_record(meta with the compact span, None) makes, its fields set as its __init__ sets them
        # (most records are spans: a frozen dataclass's __init__ costs about three times this)
        event = object.__new__(Event)
        event.__dict__.update(name=name, frame_id=meta.get("frame_id"), frame_compile_id=meta.get("frame_compile_id"),
                              attempt=attempt, meta=compact, payload="", call=-1,
                              compiled_autograd_id=meta.get("compiled_autograd_id"))
        return event
    if name == "dynamo_start" and strings:
        _name_files(meta.get("dynamo_start"), strings)
    elif name in shapes.WITH_FRAMES and strings and isinstance(meta.get(name), dict):
        meta[name] = shapes.name_files(meta[name], strings)
    try:
        return ev_mod.from_record(meta, text)
    except (TypeError, ValueError, AttributeError):  # a record of the right shape with values of the wrong types
        health.lines_not_understood += 1
        return None


def _checked(lines: bytes, expected: Optional[str]) -> tuple[bytes, bool]:
    """A payload from its lines as logged (without the first line's tab): without each line's tab, and whether it
    has the md5 its record states (or states none)."""
    payload = lines.replace(b"\n\t", b"\n")
    return payload, expected is None or hashlib.md5(payload, usedforsecurity=False).hexdigest() == expected


@memo.memoized
def _payload(lines: bytes, expected: Optional[str], keep: bool) -> tuple[bool, Optional[str]]:
    """Whether a payload has the md5 its record states (``_checked``), and its text where the report reads it. The
    same payload on ranks that compiled alike is checked and decoded once, and parsers that keep results by their
    text find it by identity."""
    payload, matched = _checked(lines, expected)
    return matched, payload.decode("utf-8", errors="replace") if keep else None


@functools.cache
def _describe_decoder() -> Optional[Callable[[bytes], Any]]:
    """msgspec's decoder of a record's JSON object that builds only its ``has_payload`` (strict JSON checked whole,
    the rest skipped unbuilt), made on first use; None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    return cast(Callable[[bytes], Any], msgspec.json.Decoder(msgspec.defstruct("Described", [("has_payload", Any, None)])).decode)


def _described(data: bytes) -> Any:
    """A describe record's JSON object read by ``_describe_decoder`` (its ``has_payload``), or None where it is not
    strict JSON of an object or msgspec is missing: the general way then reads it."""
    decode = _describe_decoder()
    if decode is None:
        return None
    try:
        return decode(data)
    except ValueError:  # msgspec's DecodeError and ValidationError
        return None


@functools.cache
def _span_decoder() -> Optional[Callable[[bytes], Any]]:
    """msgspec's decoder of a chromium span that builds only what compact_span keeps (``ph``, ``name``, ``ts`` and
    the kept arguments) and skips the rest unbuilt, made on first use; None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    # a missing argument reads as null, and compact_span leaves out the null ones alike
    args = msgspec.defstruct("SpanArgs", [(k, Any, None) for k in ev_mod._CHROMIUM_ARGS])
    span = msgspec.defstruct("Span", [("ph", Any, ""), ("name", Any, ""), ("ts", Any, 0.0),
                                      ("args", Optional[args], None)])
    return cast(Callable[[bytes], Any], msgspec.json.Decoder(span).decode)


def _compact_span(payload: bytes) -> Optional[dict[str, Any]]:
    """``compact_span(None, json.loads(payload))`` for a span that is a JSON object whose ``args`` is an object or
    null or missing, read without building what compact_span leaves out; None for anything else (the caller reads
    it the general way, which gives the same value for every input this reads)."""
    decode = _span_decoder()
    if decode is None:
        return None
    try:
        span = decode(payload)
    except ValueError:  # msgspec's DecodeError and ValidationError: not such a span, or not strict JSON
        return None
    args = span.args
    kept = {} if args is None else {k: v for k in ev_mod._CHROMIUM_ARGS if (v := getattr(args, k)) is not None}
    return {"ph": span.ph, "name": span.name, "ts": span.ts, "args": kept}


def prepare_decoders() -> None:
    """msgspec (about 40 ms to import) and the decoders made of it, made now: in the process that forks the
    processes reading rank logs, once for them all."""
    jsonfast.loads(b"0")
    _compact_span(b"{}")
    _described(b"{}")


def _name_files(start: object, strings: dict[int, str]) -> None:
    """dynamo_start's stack frames with interned file indices replaced by the file names."""
    stack = start.get("stack") if isinstance(start, dict) else None
    for frame in stack if isinstance(stack, list) else ():
        if isinstance(frame, dict) and isinstance(frame.get("filename"), int):
            frame["filename"] = strings.get(frame["filename"], frame["filename"])


def iter_events(path: Union[str, Path], health: LogHealth) -> Iterator[Event]:
    """The events of one log, in order, as it is read; what was not understood is counted in ``health``."""
    strings: dict[int, str] = {}
    with logfiles.open_log(path) as fh:
        for record, last in _records(fh, health):
            ev = _event(record, last, strings, health)
            if ev is not None:
                yield ev


def read_log(path: Union[str, Path]) -> tuple[list[Event], LogHealth]:
    """Every event of one log, and what reading it met."""
    health = LogHealth()
    try:
        return list(iter_events(path, health)), health
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise TraceLogError(f"cannot read {path}: {exc}", "give the log as torch wrote it (or gzip'd whole)") from None
    except TraceLogError:
        raise
    except Exception as exc:  # a remote file system's own error (aiohttp, botocore): one line, not a traceback
        if not logfiles.is_url(path):
            raise
        raise TraceLogError(f"cannot read {path}: {type(exc).__name__}: {exc}",
                            "check the URL, the server and your credentials") from None


def torch_version_of(events: list[Event]) -> str:
    """The torch version a log states (compilation_metrics' ``pytorch_version``), or ''."""
    for ev in events:
        if ev.name == "compilation_metrics" and isinstance(ev.meta.get("pytorch_version"), str):
            return str(ev.meta["pytorch_version"])
    return ""


def origin_of(events: list[Event], health: LogHealth) -> LogOrigin:
    """What a log says of the process that wrote it (``LogOrigin``): its first record's time and pid, the rank its
    records state, torch's version and own logging lines, the script line of its first compile, its text's size
    (its CRC-32 is found only where another rank's log may be a copy: ``_checksums``)."""
    first = _PREFIX.match(health.first_prefix)
    lines = []
    for name in sorted(health.emitters):
        m = _PREFIX.match(health.emitters[name])
        if m is not None:
            lines.append(f"{name} {m[5].decode('utf-8', 'replace')}")
    script = ""
    start = next((ev for ev in events if ev.name == "dynamo_start"), None)
    stack = start.meta.get("stack") if start is not None else None
    # the outermost frame of the script (``python -m`` runs it under runpy's two frames)
    outer = next((f for f in stack if isinstance(f, dict) and not str(f.get("filename", "")).endswith("runpy.py")),
                 None) if isinstance(stack, list) else None
    if outer is not None:
        script = f"{outer.get('filename', '?')}:{outer.get('line', '?')}"
    return LogOrigin(
        started=f"{first[1].decode()}-{first[2].decode()} {first[3].decode()}" if first is not None else "",
        pid=int(first[4]) if first is not None else 0, records_rank=health.records_rank,
        torch_version=torch_version_of(events), torch_lines=tuple(lines), script=script, size=health.bytes_read)


def device_of(events: list[Event]) -> str:
    """cuda when the guards or generated code name a CUDA tensor; cpu when there are any; else ''."""
    seen = False
    for ev in events:
        if ev.name in ("dynamo_cpp_guards_str", "inductor_output_code"):
            seen = True
            if _CUDA.search(ev.payload):
                return "cuda"
    return "cpu" if seen else ""


def backend_of(events: list[Event]) -> str:
    """inductor when Inductor left output code or a cache look-up; '' (not stated in a log) otherwise."""
    for ev in events:
        if ev.name == "inductor_output_code" or ev.name.startswith("fx_graph_cache_"):
            return "inductor"
    return ""


# ----------------------------------------------------------------------------- logs -> reports


def log_report(path: Union[str, Path], shown_as: str = "", files_ignored: int = 0,
               as_rank: bool = False) -> tuple[Report, tuple[DdpSplit, ...]]:
    """One log's report (the same function a live capture's events go through) and its DDP splits.

    A file with no record at all is an error, except as one rank of a directory (it compiled nothing)."""
    rep, splits, _ = _log_report(path, shown_as, files_ignored, as_rank)
    return rep, splits


def rank_log_report(path: Union[str, Path]) -> tuple[Report, tuple[DdpSplit, ...], LogOrigin]:
    """One rank's ``log_report`` (a file with no record is a rank that compiled nothing), and what the log says
    of the process that wrote it."""
    return _log_report(path, as_rank=True)


def _log_report(path: Union[str, Path], shown_as: str = "", files_ignored: int = 0,
                as_rank: bool = False) -> tuple[Report, tuple[DdpSplit, ...], LogOrigin]:
    """``log_report``, and what the log says of the process that wrote it."""
    from tcinspect.parse import ddp
    from tcinspect.parse.fromevents import SourceHealth, report_from_events

    start = time.perf_counter()
    events, health = read_log(path)
    read_s = time.perf_counter() - start
    if not health.records and not as_rank:
        raise TraceLogError(f"{path} holds no TORCH_TRACE record"
                            + (f" ({health.lines_not_understood} lines not understood)" if health.lines_not_understood else ""),
                            "give a dedicated_log_torch_trace_*.log file as torch wrote it")
    device = device_of(events)
    source = SourceHealth(lines_not_understood=health.lines_not_understood,
                          payload_mismatches=health.payload_mismatches, truncated_payloads=health.truncated_payloads,
                          files_ignored=files_ignored)
    rep = report_from_events(
        events, target=Target(kind=TARGET_KIND, path=shown_as or str(path)),
        options=Options(backend=backend_of(events), device=device), device=device,
        torch_version=torch_version_of(events), source=source, timings=(("read_s", round(read_s, 4)),))
    return rep, ddp.splits(events), origin_of(events, health)
