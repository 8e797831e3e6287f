"""PyTorch's own TORCH_TRACE logs -> events, streamed. No torch import: a log reads anywhere.

``TORCH_TRACE=/dir`` makes torch write one ``dedicated_log_torch_trace_[rank_N_]XXXX.log`` per process
(torch/_logging/_internal.py, LazyTraceHandler and TorchLogsFormatter): each record is a glog line
``V1123 07:01:04.270000 5375 torch/_inductor/compile_fx.py:1624] {json metadata}``, then its payload,
if any, as lines each starting with a tab; ``has_payload`` is the md5 of the payload text (the lines
without their tab, joined by newlines). ``{"str": [text, index]}`` records intern the file names that
``dynamo_start`` stacks name by index. tlparse (github.com/pytorch/tlparse) reads the same format.

The file is read in blocks and never held whole: one record at a time (the longest payload is the
most held at once), and only the payloads the report is built from are decoded.
"""

from __future__ import annotations

import copyreg
import gc
import hashlib
import io
import os
import pickle
import re
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Optional, Union, cast

from tcinspect import collector
from tcinspect.derived import runs
from tcinspect.errors import TraceLogError
from tcinspect.parse import events as ev_mod
from tcinspect.parse import jsonfast, logfiles, memo, shapes
from tcinspect.parse.events import Event
from tcinspect.report import (
    CacheLookup,
    DdpSplit,
    EventCount,
    Graph,
    IgnoredFile,
    LogOrigin,
    Options,
    ParseHealth,
    RankReport,
    Report,
    Stages,
    Target,
)

#: torch's file name prefix (torch/_logging/_internal.py LOG_PREFIX); which files are logs: parse/logfiles.py
LOG_PREFIX = logfiles.LOG_PREFIX
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


def _describe_decoder() -> Optional[Callable[[bytes], Any]]:
    """msgspec's decoder of a record's JSON object that builds only its ``has_payload`` (strict JSON checked whole,
    the rest skipped unbuilt); None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    return cast(Callable[[bytes], Any], msgspec.json.Decoder(msgspec.defstruct("Described", [("has_payload", Any, None)])).decode)


_decode_described: Optional[Callable[[bytes], Any]] = None
_described_tried = False


def _described(data: bytes) -> Any:
    """A describe record's JSON object read by ``_describe_decoder`` (its ``has_payload``), or None where it is not
    strict JSON of an object or msgspec is missing: the general way then reads it."""
    global _decode_described, _described_tried
    if not _described_tried:
        _decode_described, _described_tried = _describe_decoder(), True
    if _decode_described is None:
        return None
    try:
        return _decode_described(data)
    except ValueError:  # msgspec's DecodeError and ValidationError
        return None


def _span_decoder() -> Optional[Callable[[bytes], Any]]:
    """msgspec's decoder of a chromium span that builds only what compact_span keeps (``ph``, ``name``, ``ts`` and
    the kept arguments) and skips the rest unbuilt; None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    # a missing argument reads as null, and compact_span leaves out the null ones alike
    args = msgspec.defstruct("SpanArgs", [(k, Any, None) for k in ev_mod._CHROMIUM_ARGS])
    span = msgspec.defstruct("Span", [("ph", Any, ""), ("name", Any, ""), ("ts", Any, 0.0),
                                      ("args", Optional[args], None)])
    return cast(Callable[[bytes], Any], msgspec.json.Decoder(span).decode)


_decode_span: Optional[Callable[[bytes], Any]] = None
_span_tried = False


def _compact_span(payload: bytes) -> Optional[dict[str, Any]]:
    """``compact_span(None, json.loads(payload))`` for a span that is a JSON object whose ``args`` is an object or
    null or missing, read without building what compact_span leaves out; None for anything else (the caller reads
    it the general way, which gives the same value for every input this reads)."""
    global _decode_span, _span_tried
    if not _span_tried:
        _decode_span, _span_tried = _span_decoder(), True
    if _decode_span is None:
        return None
    try:
        span = _decode_span(payload)
    except ValueError:  # msgspec's DecodeError and ValidationError: not such a span, or not strict JSON
        return None
    args = span.args
    kept = {} if args is None else {k: v for k in ev_mod._CHROMIUM_ARGS if (v := getattr(args, k)) is not None}
    return {"ph": span.ph, "name": span.name, "ts": span.ts, "args": kept}


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


#: Report.target.kind of a report read from TORCH_TRACE logs
TARGET_KIND = "torch_trace"


#: one rank's log read, as a pool worker sends it back: (rank, its report without its large parts or why it cannot
#: be read, its large parts each pickled with a digest of the pickle, what the divergence of ranks compares of
#: it (derived.divergence.RankKeys) pickled with its digest, or () where it cannot be read, and what the log says of
#: the process that wrote it, None where it cannot be read)
RankEntry = tuple[int, Union[Report, TraceLogError], tuple[tuple[bytes, bytes], ...], tuple[bytes, ...],
                  Optional[LogOrigin]]


def read_rank(args: tuple[int, str]) -> RankEntry:
    """One rank's report, or why its log cannot be read (the other ranks are still read). Its large parts, equal
    on ranks that compiled alike, come pickled with a digest, so that the reader keeps (and unpickles) each once:
    in one process too, where this costs about a tenth of the read and keeps memory to the distinct parts."""
    rank, path = args
    try:
        rep, splits, origin = _log_report(path, as_rank=True)
    except TraceLogError as exc:
        return rank, exc, (), (), None
    values = (rep.stages.dynamo, rep.stages.aot_autograd, rep.stages.inductor, rep.compiles, rep.compile_time, splits)
    pickled = []
    _named.clear()
    for value in values:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _DISPATCH
        pickler.dump(value)
        data = buf.getvalue()
        pickled.append((hashlib.blake2b(data, digest_size=16).digest(), data))
    # the shared values it holds go first (the parts name them by digest): key components and graphs; then the six parts
    parts = []
    keys = _keys_pickled(rep, splits, tuple(digest for digest, _ in pickled))
    for digest, data in [*_named.values(), *pickled, keys]:
        if _sent is not None:  # a pool worker: a part it sent before goes back as its digest alone
            if digest in _sent:
                data = b""
            else:
                _sent.add(digest)
        parts.append((digest, data))
    _named.clear()
    return rank, rep.replace(stages=Stages(), compiles=(), compile_time=None), tuple(parts[:-1]), parts[-1], origin


#: a rank's divergence keys pickled with their digest, by the digests of the parts they follow from: ranks that
#: compiled alike find them once (the last few kept)
_keys_made: dict[tuple[bytes, ...], tuple[bytes, bytes]] = {}
_KEYS_KEPT = 16


def _keys_pickled(rep: Report, splits: tuple[DdpSplit, ...], digests: tuple[bytes, ...]) -> tuple[bytes, bytes]:
    """What the divergence of ranks compares of this rank, found here (in the worker that read it) so that the
    reader only compares the small keys of all ranks. They follow from every part but the compile times."""
    from tcinspect.derived.divergence import rank_keys
    from tcinspect.report import OK, RankReport

    of = digests[:4] + digests[5:]
    kept = _keys_made.get(of)
    if kept is None:
        keys = rank_keys(RankReport(rank=0, status=OK, stages=rep.stages, compiles=rep.compiles, ddp_splits=splits))
        data = pickle.dumps(keys, protocol=pickle.HIGHEST_PROTOCOL)
        kept = (hashlib.blake2b(data, digest_size=16).digest(), data)
        if len(_keys_made) >= _KEYS_KEPT:
            del _keys_made[next(iter(_keys_made))]
        _keys_made[of] = kept
    return kept


#: what ranks that compiled alike share by identity (parse/memo.py gives the same object for the same text): the key
#: components of a cache look-up (the FX graph cache's key, listed whole: most of a rank's compile-time part) and
#: every graph (Dynamo's, AOTAutograd's, Inductor's post-grad: most of the other parts), by their id, with their
#: pickle's digest and the pickle. Each is pickled once, and a part that holds it carries only the digest, so a
#: rank that compiled like an earlier one is pickled in a fraction of the time. Bounded by _COMPONENTS_KEPT bytes
#: of pickles, the oldest dropped first (one dropped is pickled again when a rank holds it)
_components: dict[int, tuple[Any, bytes, bytes]] = {}
_COMPONENTS_KEPT = 32 << 20
_components_bytes = 0
#: the shared values the rank being pickled holds: digest -> (digest, pickle)
_named: dict[bytes, tuple[bytes, bytes]] = {}
#: while merge_ranks reads a rank's parts: every part and shared value read so far, by digest
_received: dict[bytes, Any] = {}


def _components_digest(value: Any) -> bytes:
    """The digest of a shared value's pickle (made once while the value lives), named for the rank being pickled."""
    global _components_bytes
    kept = _components.get(id(value))
    if kept is None or kept[0] is not value:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        kept = (value, hashlib.blake2b(data, digest_size=16).digest(), data)
        _components[id(value)] = kept
        _components_bytes += len(data)
        while _components_bytes > _COMPONENTS_KEPT and len(_components) > 1:
            _components_bytes -= len(_components.pop(next(iter(_components)))[2])
    _named[kept[1]] = (kept[1], kept[2])
    return kept[1]


def _reduce_graph(graph: Graph) -> Any:
    """A graph pickled as its digest (merge_ranks reads it by it)."""
    return _shared, (_components_digest(graph),)


def _shared(digest: bytes) -> Any:
    return _received[digest]


def _reduce_lookup(lookup: CacheLookup) -> Any:
    """A cache look-up pickled with its key components as their digest (merge_ranks reads them by it)."""
    state = dict(lookup.__dict__)
    if not lookup.components:
        return _lookup, (state, None)
    state["components"] = ()
    return _lookup, (state, _components_digest(lookup.components))


def _lookup(state: dict[str, Any], components: Optional[bytes]) -> CacheLookup:
    if components is not None:
        state["components"] = _received[components]
    out = object.__new__(CacheLookup)
    out.__dict__.update(state)
    return out


_DISPATCH: dict[type, Callable[[Any], Any]] = {**copyreg.dispatch_table, CacheLookup: _reduce_lookup,
                                               Graph: _reduce_graph}


def end_reading() -> None:
    """Drop the components tuples kept pickled while the ranks of a directory were read in this process."""
    global _components_bytes
    _components.clear()
    _named.clear()
    _keys_made.clear()
    _components_bytes = 0


#: in a pool worker, the digests of the parts it has sent: the reader takes each worker's entries in the order the
#: worker read them (one queue, which keeps each sender's order), so a part is unpickled from the first entry that
#: carries it and later ones need only its digest
_sent: Optional[set[bytes]] = None


def _worker_start() -> None:
    global _sent
    _sent = set()
    memo.enable()
    gc.disable()  # the worker lives for this reading: see read()


def read(path: Union[str, Path], rank: Optional[int] = None, jobs: Optional[int] = None) -> Report:
    """The report of a TORCH_TRACE log file, or of a directory of rank logs merged with their divergence.

    Args:
        path: a log (``.gz`` too) or a directory of rank logs (parse/logfiles.py says which files are), a local
            path or any fsspec URL (``s3://bucket/trace/``, ``https://host/trace/rank_0.log.gz``).
        rank: read only this rank of a directory.
        jobs: processes that read ranks in parallel (default: one per idle core).
    """
    # what a log's reading makes is kept or freed by reference counting, not the cycle collector, whose passes over
    # the reports, parts and kept results found nothing and took a quarter of the time (32 ranks of a 12-layer
    # GPT-2's log in one process: 13.6 s with it, 10.0 s without)
    with collector.paused():
        return _read(path, rank, jobs)


def _read(path: Union[str, Path], rank: Optional[int], jobs: Optional[int]) -> Report:
    shown = str(path)
    if not logfiles.is_directory(path):
        named = logfiles.rank_in_name(shown.rsplit("/", 1)[-1])
        if rank is not None and named is not None and named != rank:
            raise TraceLogError(f"{shown} is rank {named}'s log, not rank {rank}'s",
                                "give the directory of rank logs with --rank, or leave out --rank")
        return log_report(path, shown)[0]
    found = logfiles.rank_logs(path)
    if not found.ranks:
        raise TraceLogError(f"{shown} holds no TORCH_TRACE log: it has {logfiles.seen_text(found.seen)}, and none "
                            "starts with a glog line of JSON or is named dedicated_log_torch_trace_*",
                            "give the directory TORCH_TRACE named, or one log file in it")
    ignored = tuple(IgnoredFile(f.name, why) for f, why in found.ignored)
    if rank is not None:
        if rank not in found.ranks:
            raise TraceLogError(f"{shown} holds no log of rank {rank} (ranks {_ranks(found.ranks)})",
                                "pick one of those ranks with --rank")
        return _with_ignored(log_report(found.ranks[rank].where, shown, len(ignored))[0], ignored)
    entries = [(r, f.where) for r, f in found.ranks.items()]
    if len(entries) == 1:
        return _with_ignored(log_report(entries[0][1], shown, len(ignored))[0], ignored)
    names = {r: f.name for r, f in found.ranks.items()}
    sizes = {r: f.size for r, f in found.ranks.items()}
    return merge_ranks(_map(entries, jobs, sizes), shown, ignored, names, dict(entries))


def _with_ignored(rep: Report, ignored: tuple[IgnoredFile, ...]) -> Report:
    if not ignored or rep.parse is None:
        return rep
    return rep.replace(parse=replace(rep.parse, ignored_files=ignored))


def _ranks(ranks: Mapping[int, object]) -> str:
    from tcinspect.vocabulary import ranks_text

    return ranks_text(list(ranks)).split(" ", 1)[1]


def workers(jobs: Optional[int], tasks: int) -> int:
    """Processes for ``tasks`` logs: ``jobs``, or one per core this process may use that other processes are not
    already keeping busy (the load average): on a shared machine, more workers than idle cores only slow it down."""
    if jobs is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        try:
            busy = os.getloadavg()[0]
        except (AttributeError, OSError):  # no load average here (Windows)
            busy = 0.0
        jobs = min(cores, max(1, round(cores - busy)))
    return max(1, min(tasks, jobs))


def _map(entries: list[tuple[int, str]], jobs: Optional[int],
         sizes: Optional[Mapping[int, int]] = None) -> Iterator[RankEntry]:
    """Each rank's report, read by a pool of processes (``_Pool``), in the order they are read; in this process
    where one worker would do (or where this system gives no working semaphores)."""
    n = workers(jobs, len(entries))
    if n > 1:
        try:
            pool = _Pool(entries, n, sizes)
        except (OSError, NotImplementedError):  # no working semaphores here (some sandboxes): one process reads all
            pass
        else:
            with pool:
                yield from pool
            return
    yield from _read_here(entries)


def _strides(entries: list[tuple[int, str]], n: int, sizes: Optional[Mapping[int, int]]) -> list[list[tuple[int, str]]]:
    """The ranks each of ``n`` workers reads first: worker ``i`` those whose number is ``i`` modulo ``n``, the
    largest first (by ``sizes``, in bytes; else in rank order). A torchrun job puts rank r on GPU ``r % (GPUs per
    host)``, so with ``n`` a multiple of that (16 workers, 8 GPUs) a worker's ranks log the same GPU's version of
    each graph and it parses them once (parse/memo.py). Only the reading's speed depends on it: the merge is the
    same in any order."""
    strides: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    for entry in sorted(entries):
        strides[entry[0] % n].append(entry)
    if sizes:
        for stride in strides:
            stride.sort(key=lambda e: -sizes.get(e[0], 0))  # stable: equal sizes stay in rank order
    return strides


#: the bytes of rank entries a pool worker may have sent that the reader has not yet taken (_send): one more waits
#: for the reader, unless none of its entries waits. A worker's first entry carries every part of its rank (about
#: 13 MB for a 12-layer GPT-2 trained on a GPU), later ones only the parts it has not sent (0-4 MB). Sixteen
#: workers send their first entries within a fraction of a second, and the reader takes about a second to unpickle
#: them; a bound of two entries a worker kept each worker waiting 0.2-0.5 s of a 3.8 s reading (256 ranks, H200
#: host), this one none, while memory still holds a few ranks' entries per worker, not every rank's
_IN_FLIGHT = 32 << 20
#: what an entry costs besides its parts' pickles (its report without the parts, the message's own bytes)
_ENTRY_BYTES = 64 << 10


class _Schedule:
    """Which rank each pool worker reads next, shared by the workers (``_next_rank``): the strides (``_strides``),
    for each the next rank its worker reads and one past the last a thief may take, the ranks begun, and the kind
    of graphs each worker read last (``_kind_of``; 0 before its first)."""

    def __init__(self, ctx: Any, strides: list[list[tuple[int, str]]]) -> None:
        n = len(strides)
        self.strides = strides
        self.lock = ctx.Lock()
        self.heads = ctx.RawArray("i", n)
        self.tails = ctx.RawArray("i", [len(s) for s in strides])
        self.begun = ctx.RawValue("i", 0)
        self.kinds = ctx.RawArray("q", n)
        # each worker's bytes of entries sent and not yet taken by the reader (_send), and its budget of them
        self.taken = ctx.Condition(ctx.Lock())
        self.in_flight = ctx.RawArray("q", n)
        self.budget = _IN_FLIGHT


class _Pool:
    """``n`` forked processes reading ranks, each its own stride first (``_strides``) and then ranks of the others
    (``_next_rank``). Each rank's entry is sent back as soon as it is read (``_send``): a worker with
    ``_IN_FLIGHT`` bytes of entries the reader has not taken waits, so memory holds a few ranks' entries per
    worker, never all of them. A worker that fails ends the reading with its exception; one that ends without a word
    (killed: out of memory?) with a TraceLogError naming its exit code."""

    def __init__(self, entries: list[tuple[int, str]], n: int, sizes: Optional[Mapping[int, int]]) -> None:
        import multiprocessing

        from tcinspect.derived import divergence  # noqa: F401 - imported once here, not in each forked worker
        from tcinspect.parse import ddp, fromevents  # noqa: F401

        # msgspec (about 40 ms to import) and its decoders made once here too, not in each worker
        jsonfast.loads(b"0")
        _compact_span(b"{}")
        _described(b"{}")
        # forkserver/spawn would re-import tcinspect in each worker; fork shares what is imported (no torch here)
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        self.schedule = _Schedule(ctx, _strides(entries, n, sizes))
        self.results = ctx.Queue()  # bounded by the bytes each worker has in flight (_send)
        self.processes = [ctx.Process(target=_pool_worker, daemon=True, args=(i, self.schedule, self.results))
                          for i in range(n)]

    def __enter__(self) -> _Pool:
        for p in self.processes:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join()
        self.results.close()
        self.results.join_thread()

    def __iter__(self) -> Iterator[RankEntry]:
        import queue

        running = set(range(len(self.processes)))
        while running:
            try:
                message = self.results.get(timeout=0.5)
            except queue.Empty:
                for i in sorted(running):
                    code = self.processes[i].exitcode
                    if code is not None and code != 0:  # ended without its last word: killed
                        raise TraceLogError(
                            f"a process reading rank logs ended with exit code {code}"
                            + (" (killed: out of memory?)" if code == -9 else ""),
                            "read with fewer processes (--jobs 2, or --jobs 1)") from None
                continue
            kind, value = message
            if kind == "rank":
                entry, index, size = value
                with self.schedule.taken:
                    self.schedule.in_flight[index] -= size
                    self.schedule.taken.notify_all()
                yield entry
            elif kind == "done":
                running.discard(value)
            else:
                raise value


def _pool_worker(index: int, schedule: _Schedule, results: Any) -> None:
    _worker_start()
    try:
        while (entry := _next_rank(index, schedule)) is not None:
            read = read_rank(entry)
            schedule.kinds[index] = _kind_of(read)
            _send(index, schedule, results, read)
    except BaseException as exc:  # noqa: BLE001 - the reader raises it
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an exception that does not pickle goes as its text
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        results.put(("failed", exc))
    results.put(("done", index))


def _send(index: int, schedule: _Schedule, results: Any, entry: RankEntry) -> None:
    """Worker ``index``'s entry sent to the reader once the reader has taken enough of those it sent before
    (``_IN_FLIGHT``); the reader takes its size off as it takes it (``_Pool.__iter__``)."""
    size = _ENTRY_BYTES + sum(len(data) for _, data in entry[2]) + sum(len(data) for data in entry[3])
    s = schedule
    with s.taken:
        while s.in_flight[index] and s.in_flight[index] + size > s.budget:
            s.taken.wait(0.5)
        s.in_flight[index] += size
    results.put(("rank", (entry, index, size)))


def _kind_of(entry: RankEntry) -> int:
    """The graphs and key components a rank's entry names (its shared values' digests) as a number: equal for
    ranks that compiled alike on the same GPU, whose graphs a worker that read one has kept (0: none named)."""
    named = sorted(digest for digest, _ in entry[2][:-6])
    if not named:
        return 0
    return int.from_bytes(hashlib.blake2b(b"".join(named), digest_size=8).digest(), "little", signed=True) or 1


#: the ranks a stride must have left for a worker done with its own to take one of a kind it has not read. A rank
#: of another GPU costs a worker about what its first rank cost (its graphs parsed afresh): 0.71-1.20 s against a
#: median 0.14 s for a later rank of its own GPU (256 varied ranks of a 12-layer GPT-2, 16 workers, H100 host), so
#: taking one from a stride with fewer left than that ratio ends the reading later than leaving them to their worker
_STEAL_FROM = 8


def _next_rank(index: int, schedule: _Schedule) -> Optional[tuple[int, str]]:
    """Worker ``index``'s next rank: the next of its own stride; else the last of the stride with the most left
    among those whose worker last read ranks of the kind this one did (``_kind_of``: it has their graphs kept);
    else the last of the stride with the most left, where that is at least ``_STEAL_FROM``; None: no more."""
    s = schedule
    with s.lock:
        if s.heads[index] < s.tails[index]:
            entry: tuple[int, str] = s.strides[index][s.heads[index]]
            s.heads[index] += 1
        else:
            n = len(s.strides)
            left = [s.tails[i] - s.heads[i] for i in range(n)]
            mine = s.kinds[index]
            alike = [i for i in range(n) if mine and s.kinds[i] == mine and left[i] > 0]
            victim = max(alike or range(n), key=left.__getitem__)
            if not alike and left[victim] < _STEAL_FROM:
                return None
            s.tails[victim] -= 1
            entry = s.strides[victim][s.tails[victim]]
        s.begun.value += 1
    return entry


def _read_here(entries: list[tuple[int, str]]) -> Iterator[RankEntry]:
    """Each rank's report read in this process, in order, parsed parts kept across ranks while it reads."""
    try:
        with memo.across_ranks():
            yield from (read_rank(e) for e in entries)
    finally:
        end_reading()


def merge_ranks(results: Iterable[RankEntry], shown_as: str, ignored: tuple[IgnoredFile, ...],
                names: Mapping[int, str], logs: Optional[Mapping[int, str]] = None) -> Report:
    """Rank reports (``read_rank``'s, in any order) merged as a distributed capture's are: the lowest rank read on
    top, every rank under ranks (one whose log cannot be read has status ``error``). Parts equal on several ranks
    are unpickled and kept once. ``logs``: where each rank's log is, to tell copies of one log apart
    (``_checksums``); without it, such logs are said to come from one process, not to be copies."""
    shared = _received
    shared.clear()

    def part(digest: bytes, data: bytes) -> Any:
        if digest not in shared:
            shared[digest] = pickle.loads(data)
        return shared[digest]

    try:
        return _merge_ranks(results, shown_as, ignored, names, part, logs or {})
    finally:
        shared.clear()


def _merge_ranks(results: Iterable[RankEntry], shown_as: str, ignored: tuple[IgnoredFile, ...],
                 names: Mapping[int, str], part: Callable[[bytes, bytes], Any], logs: Mapping[int, str]) -> Report:
    from tcinspect.derived.divergence import RankKeys
    from tcinspect.parse.merge import merge
    from tcinspect.report import OK, RankReport

    ranks: list[RankReport] = []
    base: Optional[Report] = None
    base_rank = -1
    errors: list[tuple[int, TraceLogError]] = []
    read: list[tuple[int, Report]] = []  # what each rank's report adds to the whole, added in rank order below
    keys: dict[int, RankKeys] = {}
    for r, rep, parts, rank_keys, origin in results:
        if isinstance(rep, TraceLogError):
            ranks.append(RankReport(rank=r, status="error", error=rep.one_line(), log=names.get(r, "")))
            errors.append((r, rep))
            continue
        # the key components they name first, then the six parts
        dynamo, aot, inductor, compiles, compile_time, splits = [part(d, b) for d, b in parts][-6:]
        if rank_keys:
            keys[r] = part(*rank_keys)
        stages = Stages(dynamo, aot, inductor)
        ranks.append(RankReport(rank=r, status=OK if rep.ok else "failed", error=rep.error, device=rep.device,
                                stages=stages, compiles=compiles, ddp_splits=splits, compile_time=compile_time,
                                log=names.get(r, ""), origin=origin, graph_execution_order=rep.graph_execution_order))
        if base is None or r < base_rank:  # the lowest rank read, in whatever order the results come
            base, base_rank = rep.replace(stages=stages, compiles=compiles, compile_time=compile_time), r
        read.append((r, rep))
    if base is None:
        raise min(errors, key=lambda e: e[0])[1]
    unknown: dict[str, int] = {}
    artifacts: dict[str, int] = {}
    counts = [0, 0, 0]
    read_s = 0.0
    for _, rep in sorted(read, key=lambda e: e[0]):  # the same whole in whatever order the results came
        read_s += dict(rep.timings).get("read_s", 0.0)
        if rep.parse is None:
            continue
        for e in rep.parse.unknown_events:
            unknown[e.name] = unknown.get(e.name, 0) + e.count
        for e in rep.parse.artifacts_not_understood:
            artifacts[e.name] = artifacts.get(e.name, 0) + e.count
        counts[0] += rep.parse.lines_not_understood
        counts[1] += rep.parse.payload_mismatches
        counts[2] += rep.parse.truncated_payloads
    parse = None
    if unknown or artifacts or any(counts) or ignored:
        parse = ParseHealth(tuple(EventCount(n, c) for n, c in unknown.items()), lines_not_understood=counts[0],
                            artifacts_not_understood=tuple(EventCount(n, c) for n, c in artifacts.items()),
                            payload_mismatches=counts[1], truncated_payloads=counts[2], files_ignored=len(ignored),
                            ignored_files=ignored)
    base = base.replace(target=Target(kind=TARGET_KIND, path=shown_as), parse=parse,
                        timings=(("read_s", round(read_s, 4)),))
    return merge(base, _checksums(ranks, logs), keys=keys)


def _checksums(ranks: list[RankReport], logs: Mapping[int, str]) -> list[RankReport]:
    """The ranks, those whose log may be a copy of another's (the same size, pid and first record) with a CRC-32 of
    their log text, read again for it: copies are rare, and hashing every log as it was read cost the
    reader 7-8% of its time (a 1.8 MB log, 2-core machine)."""
    alike: dict[tuple[int, int, str], list[int]] = {}
    for i, r in enumerate(ranks):
        if r.origin is not None and r.origin.size and r.rank in logs:
            alike.setdefault((r.origin.size, r.origin.pid, r.origin.started), []).append(i)
    out = list(ranks)
    found: dict[Any, str] = {}  # by file: hard links of one file (a benchmark's copies) are read once
    for same in alike.values():
        if len(same) < 2:
            continue
        for i in same:
            origin, where = out[i].origin, logs[out[i].rank]
            assert origin is not None
            try:
                st = None if logfiles.is_url(where) else os.stat(where)
                file = (st.st_dev, st.st_ino) if st is not None else where
                if file not in found:
                    found[file] = _crc32(where)
                out[i] = replace(out[i], origin=replace(origin, crc32=found[file]))
            except (OSError, EOFError, zlib.error):  # gone since it was read: said to come from one process
                pass
    return out


def _crc32(path: str) -> str:
    """The CRC-32 of a log's text (gunzipped), 8 hex digits."""
    crc = 0
    with logfiles.open_log(path) as fh:
        while block := fh.read(_BLOCK):
            crc = zlib.crc32(block, crc)
    return f"{crc:08x}"
