"""The ranks of a distributed run merged into one report: rank 0's report with every rank's own under ``ranks``,
and where they diverge (``merge``, pure). Ranks read from TORCH_TRACE logs (parse/rankpool.py) come as
``RankEntry``'s, their large parts pickled once for all the ranks that share them: ``merge_ranks`` reads them back
and merges them (reading again only logs that may be copies of another: ``_checksums``)."""

from __future__ import annotations

import io
import os
import pickle
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, Optional, Union

from tcinspect.derived.divergence import RankKeys, divergences
from tcinspect.derived.runs import mixed_runs
from tcinspect.errors import TraceLogError
from tcinspect.parse import logfiles, tracelog
from tcinspect.report import (
    OK,
    CacheLookup,
    EventCount,
    IgnoredFile,
    LogOrigin,
    ParseHealth,
    RankReport,
    Report,
    Stages,
    Target,
)
from tcinspect.vocabulary import outcome


def merge(base: Report, ranks: Sequence[RankReport], timings: tuple[tuple[str, float], ...] = (),
          keys: Optional[Mapping[int, RankKeys]] = None) -> Report:
    """``base`` (rank 0's report) with every rank under ``ranks``; its error names each rank that failed. ``keys``:
    what the divergence compares of each rank, where the processes that read the ranks found it. Ranks read from
    TORCH_TRACE logs also say whether their logs are one run's (``mixed_runs``)."""
    failed = [r for r in ranks if r.status != OK]
    error = "; ".join(f"rank {r.rank} {r.status}: {outcome(r)}" for r in failed)
    ordered = tuple(sorted(ranks, key=lambda r: r.rank))
    return base.replace(ranks=ordered, error=error, timings=tuple(base.timings) + tuple(timings),
                        divergence=divergences(ordered, keys), mixed_runs=mixed_runs(ordered))


class RankEntry(NamedTuple):
    """One rank's log read (parse/rankpool.py ``read_rank``), as a pool worker sends it back and ``merge_ranks``
    takes it."""

    rank: int
    #: its report without its large parts, or why its log cannot be read
    report: Union[Report, TraceLogError]
    #: its large parts, each pickled with a digest of the pickle: the values they name by digest (key components and
    #: graphs, rankpool.RankReader) first, then the six parts; one a pool worker sent before comes as its digest alone
    parts: tuple[tuple[bytes, bytes], ...]
    #: what the divergence of ranks compares of it (derived.divergence.RankKeys) as (digest, pickle); () where its
    #: log cannot be read
    keys: tuple[bytes, ...]
    #: what its log says of the process that wrote it; None where it cannot be read
    origin: Optional[LogOrigin]


def merge_ranks(results: Iterable[RankEntry], shown_as: str, ignored: tuple[IgnoredFile, ...],
                names: Mapping[int, str], logs: Optional[Mapping[int, str]] = None) -> Report:
    """Rank reports (parse/rankpool.py ``read_rank``'s, in any order) merged as a distributed capture's are: the
    lowest rank read on top, every rank under ranks (one whose log cannot be read has status ``error``). Parts
    equal on several ranks are unpickled and kept once (``Received``). ``logs``: where each rank's log is, to tell
    copies of one log apart (``_checksums``); without it, such logs are said to come from one process, not to be
    copies."""
    part = Received().part
    ranks: list[RankReport] = []
    base: Optional[Report] = None
    base_rank = -1
    errors: list[tuple[int, TraceLogError]] = []
    read: list[tuple[int, Report]] = []  # what each rank's report adds to the whole, added in rank order below
    keys: dict[int, RankKeys] = {}
    for entry in results:
        r, rep = entry.rank, entry.report
        if isinstance(rep, TraceLogError):
            ranks.append(RankReport(rank=r, status="error", error=rep.one_line(), log=names.get(r, "")))
            errors.append((r, rep))
            continue
        # the key components they name first, then the six parts
        dynamo, aot, inductor, compiles, compile_time, splits = [part(d, b) for d, b in entry.parts][-6:]
        if entry.keys:
            keys[r] = part(*entry.keys)
        stages = Stages(dynamo, aot, inductor)
        ranks.append(RankReport(rank=r, status=OK if rep.ok else "failed", error=rep.error, device=rep.device,
                                stages=stages, compiles=compiles, ddp_splits=splits, compile_time=compile_time,
                                log=names.get(r, ""), origin=entry.origin,
                                graph_execution_order=rep.graph_execution_order))
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
    base = base.replace(target=Target(kind=tracelog.TARGET_KIND, path=shown_as), parse=parse,
                        timings=(("read_s", round(read_s, 4)),))
    return merge(base, _checksums(ranks, logs or {}), keys=keys)


class Received:
    """The parts and shared values of the rank entries merged so far, each unpickled once, by its digest. A part's
    pickle names a value pickled apart (rankpool.RankReader) as ``Received.shared`` or ``Received.cache_lookup``
    of its digest, which its unpickler gives as this object's."""

    def __init__(self) -> None:
        self._read: dict[bytes, Any] = {}

    def part(self, digest: bytes, data: bytes) -> Any:
        """The value pickled as ``data``, unpickled from the first entry that carries it (later ones may carry only
        its digest)."""
        if digest not in self._read:
            self._read[digest] = _PartUnpickler(data, self).load()
        return self._read[digest]

    def shared(self, digest: bytes) -> Any:
        """A shared value a part names by its digest (read before the part, from the same entry or an earlier)."""
        return self._read[digest]

    def cache_lookup(self, state: dict[str, Any], components: Optional[bytes]) -> CacheLookup:
        """A cache look-up of the fields ``state``, its key components named by their digest."""
        if components is not None:
            state["components"] = self._read[components]
        out = object.__new__(CacheLookup)
        out.__dict__.update(state)
        return out


class _PartUnpickler(pickle.Unpickler):
    """A part's unpickler: ``Received.shared`` and ``Received.cache_lookup`` as ``received``'s."""

    def __init__(self, data: bytes, received: Received) -> None:
        super().__init__(io.BytesIO(data))
        self._received = received

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__:
            if name == "Received.shared":
                return self._received.shared
            if name == "Received.cache_lookup":
                return self._received.cache_lookup
        return super().find_class(module, name)


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


#: the bytes of a log read at a time for its CRC-32
_CRC_BLOCK = 1 << 20


def _crc32(path: str) -> str:
    """The CRC-32 of a log's text (gunzipped), 8 hex digits."""
    crc = 0
    with logfiles.open_log(path) as fh:
        while block := fh.read(_CRC_BLOCK):
            crc = zlib.crc32(block, crc)
    return f"{crc:08x}"
