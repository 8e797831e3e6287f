"""Where TORCH_TRACE logs are and which files are rank logs: a local file or directory, or any fsspec URL.

torch writes ``dedicated_log_torch_trace_rank_N_XXXX.log`` (torch/_logging/_internal.py, LazyTraceHandler:
``tempfile.mkstemp`` with the prefix ``LOG_PREFIX + "rank_N_"`` when the process group is up at its first
record, without ``rank_N_`` when it is not) and, once the process group is up, adds ``"rank": N`` to every
record's JSON (``trace_structured``). Log collectors rename, compress and regroup these files
(``rank_3.log.gz``, ``node1/trace-rank3.log``). A file here is a log by its content (its first line is a glog
record with JSON, gzip'd or not) or by torch's name; its rank comes from its name (or its folder's), else from
the first record that carries one.

Remote sources (``s3://``, ``gs://``, ``https://``, … : anything fsspec opens) are streamed block by block as
local files are; fsspec is the optional extra ``tcinspect[remote]``. No torch import.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Optional, Union, cast

from tcinspect.errors import TraceLogError

#: torch's file name prefix (torch/_logging/_internal.py LOG_PREFIX)
LOG_PREFIX = "dedicated_log_torch_trace_"
#: what installs fsspec and its HTTP and S3 file systems
REMOTE_EXTRA = "pip install 'tcinspect[remote]'"
#: a rank in a file or folder name: torch's ``rank_3``, and the ``rank3`` / ``rank-3`` of log collectors
_RANK_NAME = re.compile(r"(?:^|[^a-z0-9])rank[_.-]?(\d+)(?![0-9])", re.IGNORECASE)
#: the glog prefix, with a ``[rankN]:`` some handlers put before it
_GLOG_HEAD = re.compile(rb"(?:\[rank(\d+)\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^\]\n]*:\d+\](?: \[[^\]\n]*\])* \{")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: how deep a directory's folders are searched for logs (collectors group them by node, host or rank)
MAX_DEPTH = 3
#: sniffing a file without a rank in its name reads its records up to this many bytes for a ``"rank"``
_RANK_SCAN = 64 << 20


def is_url(source: Union[str, Path]) -> bool:
    """Whether ``source`` is a URL for fsspec (``s3://bucket/dir``, ``https://host/x.log``) rather than a path."""
    return isinstance(source, str) and _URL.match(source) is not None


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise TraceLogError("reading a URL needs fsspec, which is not installed",
                            f"{REMOTE_EXTRA} (or give a local path)") from None
    return fsspec


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's file system for ``url`` and the path on it; one line naming what to install when it is missing."""
    fsspec = _fsspec()
    try:
        return cast(tuple[Any, str], fsspec.core.url_to_fs(url))
    except ImportError as exc:  # fsspec knows the protocol, its implementation is not installed (s3fs, gcsfs, aiohttp)
        raise TraceLogError(f"{url}: {str(exc).splitlines()[0]}",
                            f"{REMOTE_EXTRA} (s3://, http(s)://; gs:// needs gcsfs too)") from None
    except ValueError as exc:  # an unknown protocol
        raise TraceLogError(f"{url}: {exc}", "give a local path or a URL fsspec knows (s3://, gs://, https://, …)") \
            from None


class _Rejoined(io.RawIOBase):
    """A stream whose first bytes were read to look at them, read again from its start."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._rest.close()
        super().close()


def open_log(source: Union[str, Path]) -> IO[bytes]:
    """A log's bytes, streamed and gunzipped when they are gzip (by content, not by name); the caller closes it."""
    if is_url(source):
        fs, path = filesystem(str(source))
        # http(s): stream the body (a plain web server such as http.server answers no range requests)
        raw = fs.open(path, "rb", block_size=0) if fs.protocol in ("http", "https") or "http" in fs.protocol \
            else fs.open(path, "rb")
    else:
        raw = open(source, "rb", buffering=0)  # noqa: SIM115 - handed to the caller, who closes it
    head = raw.read(2)
    stream: IO[bytes]
    if isinstance(raw, io.FileIO) and raw.seekable():  # a local file: read from its start again, no copy of each block
        raw.seek(0)
        stream = io.BufferedReader(raw, 1 << 20)
    else:  # a remote stream, a pipe
        stream = io.BufferedReader(_Rejoined(head, raw), 1 << 20)
    return cast(IO[bytes], gzip.GzipFile(fileobj=stream, mode="rb")) if head == b"\x1f\x8b" else stream


@dataclass(frozen=True)
class LogFile:
    """A file of a log directory: where it is (a path or URL), its name below the directory, its mtime."""

    where: str
    name: str
    mtime: float = 0.0
    size: int = -1


@dataclass(frozen=True)
class RankLogs:
    """A directory's logs: rank -> its log, and each other file with why it was not read."""

    ranks: dict[int, LogFile]
    ignored: tuple[tuple[LogFile, str], ...]
    #: every file looked at, in name order (to say what was there when none is a log)
    seen: tuple[LogFile, ...] = ()


def is_directory(source: Union[str, Path]) -> bool:
    """Whether ``source`` names a directory (an http(s) URL does when it ends with ``/``: its index page)."""
    if not is_url(source):
        return Path(source).is_dir()
    fs, path = filesystem(str(source))
    if "http" in _protocols(fs):  # a web server says nothing of directories; asking would download a log whole
        return str(source).endswith("/")
    try:
        return bool(fs.isdir(path))
    except OSError as exc:
        raise TraceLogError(f"cannot read {source}: {exc}", "check the URL and your credentials") from None


def _protocols(fs: Any) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)


def exists(source: Union[str, Path]) -> bool:
    if not is_url(source):
        return Path(source).exists()
    fs, path = filesystem(str(source))
    try:
        return bool(fs.exists(path))
    except OSError:
        return False


def files(source: Union[str, Path]) -> list[LogFile]:
    """The files below a directory (``MAX_DEPTH`` folders deep), in name order."""
    if not is_url(source):
        root = Path(source)
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            depth = len(Path(dirpath).relative_to(root).parts)
            if depth >= MAX_DEPTH:
                dirnames.clear()
            dirnames.sort()
            for f in filenames:
                p = Path(dirpath) / f
                try:
                    st = p.stat()
                except OSError:
                    continue
                found.append(LogFile(str(p), p.relative_to(root).as_posix(), st.st_mtime, st.st_size))
        return sorted(found, key=lambda f: f.name)
    fs, path = filesystem(str(source))
    base = str(source).rstrip("/")
    try:
        listed = fs.find(path, maxdepth=MAX_DEPTH, detail=True)
    except OSError as exc:
        raise TraceLogError(f"cannot list {source}: {exc}", "check the URL and your credentials") from None
    found = []
    top = path.rstrip("/")
    for name, info in listed.items():
        if info.get("type") == "directory":
            continue
        rel = name[len(top):].lstrip("/") if name.startswith(top) else name.rsplit("/", 1)[-1]
        url = name if is_url(name) else f"{base}/{rel}"
        found.append(LogFile(url, rel, _mtime(info), int(info.get("size") or -1)))
    return sorted(found, key=lambda f: f.name)


def _mtime(info: dict[str, Any]) -> float:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return float(value)
        stamp = getattr(value, "timestamp", None)  # a datetime
        if callable(stamp):
            return float(stamp())
    return 0.0


_LOG_LIKE = re.compile(r"(\.log|\.gz)$|^dedicated_log_torch_trace_|rank", re.IGNORECASE)


def looks_like_logs(directory: Path) -> bool:
    """Whether a local directory has a file named like a log (``.log``, ``.gz``, torch's prefix, a rank; not a .py
    file), so that
    it is read as logs (and, when none is one, told what it holds) rather than taken for a model file."""
    root_depth = len(directory.parts)
    for dirpath, dirnames, filenames in os.walk(directory):
        if len(Path(dirpath).parts) - root_depth >= MAX_DEPTH:
            dirnames.clear()
        if any(_LOG_LIKE.search(f) and not f.endswith(".py") for f in filenames):
            return True
    return False


def rank_in_name(name: str) -> Optional[int]:
    """The rank a file's name (or, failing that, its nearest folder's) states, if any."""
    for part in reversed(name.split("/")):
        m = _RANK_NAME.search(part)
        if m is not None:
            return int(m[1])
    return None


@dataclass(frozen=True)
class Probe:
    """What the start of a file says: whether it is a TORCH_TRACE log, and the rank its records state."""

    is_log: bool
    rank: Optional[int] = None
    why_not: str = ""


def probe(source: Union[str, Path], want_rank: bool = True) -> Probe:
    """Whether the file is a log by content (its first line a glog record with JSON), and, when ``want_rank``,
    the rank of the first record that states one (``"rank": N``, or a ``[rankN]:`` prefix)."""
    try:
        with open_log(source) as fh:
            head = fh.read(4096)
            if not head:
                return Probe(False, why_not="empty")
            m = _GLOG_HEAD.match(head)
            if m is None:
                return Probe(False, why_not="not a TORCH_TRACE log (its first line is not a glog record with JSON)")
            if not want_rank:
                return Probe(True)
            return Probe(True, _rank_of_records(head, fh))
    except (OSError, EOFError, ValueError) as exc:  # gzip.BadGzipFile is an OSError; zlib.error a ValueError here
        return Probe(False, why_not=f"cannot be read ({exc})")


def _rank_of_records(head: bytes, fh: IO[bytes]) -> Optional[int]:
    read, buf = len(head), head
    while True:
        lines = buf.split(b"\n")
        buf = lines.pop()  # the line not yet ended
        for line in lines:
            if line.startswith(b"\t"):
                continue
            m = _GLOG_HEAD.match(line)
            if m is None:
                continue
            if m[1] is not None:
                return int(m[1])
            if b'"rank"' in line:
                try:
                    meta = json.loads(line[m.end() - 1:])
                except ValueError:
                    continue
                if isinstance(meta, dict) and isinstance(meta.get("rank"), int):
                    return int(meta["rank"])
        if read >= _RANK_SCAN:
            return None
        block = fh.read(1 << 20)
        if not block:
            return None
        read += len(block)
        # a payload line can be long: keep only what a header needs
        buf = (buf if len(buf) < (1 << 20) or not buf.startswith(b"\t") else b"") + block


def _sniffed(found: Sequence[LogFile], jobs: int = 16) -> list[Probe]:
    """Each file probed: a name torch gave with a rank in it needs nothing read; the others are read at their start
    (by a few threads: remote reads wait on the network)."""

    def one(f: LogFile) -> Probe:
        base = f.name.rsplit("/", 1)[-1]
        if base.startswith(LOG_PREFIX) and rank_in_name(base) is not None:
            return Probe(True, rank_in_name(base))
        named = rank_in_name(f.name)
        p = probe(f.where, want_rank=named is None)
        if not p.is_log and base.startswith(LOG_PREFIX):
            # torch's own name: read it, as a rank that compiled nothing (empty) or with what is not understood counted
            return Probe(True, named)
        return Probe(p.is_log, named if named is not None else p.rank, p.why_not)

    if len(found) <= 1:
        return [one(f) for f in found]
    with ThreadPoolExecutor(max_workers=min(jobs, len(found))) as pool:
        return list(pool.map(one, found))


def rank_logs(directory: Union[str, Path]) -> RankLogs:
    """The rank logs of a directory (local or a URL), and why every other file is not read.

    A rank with several logs (the job restarted into the same directory) is read from its newest. Logs that
    state no rank in their name or records: alone, the newest is rank 0; beside rank logs, none is read."""
    found = files(directory)
    probes = _sniffed(found)
    by_rank: dict[int, list[LogFile]] = {}
    plain: list[LogFile] = []
    ignored: list[tuple[LogFile, str]] = []
    for f, p in zip(found, probes):
        if not p.is_log:
            ignored.append((f, p.why_not or "not a TORCH_TRACE log"))
        elif p.rank is None:
            plain.append(f)
        else:
            by_rank.setdefault(p.rank, []).append(f)
    plain.sort(key=lambda f: (f.mtime, f.name))
    if not by_rank and plain:
        by_rank[0] = [plain.pop()]
        ignored.extend((f, "a log with no rank, older than the one read as rank 0") for f in plain)
    else:
        ignored.extend((f, "a log with no rank in its name or records, beside rank logs") for f in plain)
    ranks: dict[int, LogFile] = {}
    for rank, logs in sorted(by_rank.items()):
        logs.sort(key=lambda f: (f.mtime, f.name))
        ranks[rank] = logs[-1]
        ignored.extend((f, f"an older log of rank {rank} (the job restarted?): {logs[-1].name} is read")
                       for f in logs[:-1])
    return RankLogs(ranks, tuple(sorted(ignored, key=lambda x: x[0].name)), tuple(found))


def seen_text(seen: Sequence[LogFile], limit: int = 6) -> str:
    """``a.txt, b.json and 3 more`` / ``nothing``: the files a directory held."""
    if not seen:
        return "no file at all"
    names = [f.name for f in seen[:limit]]
    more = len(seen) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")

