"""TORCH_TRACE logs read into one report (``read``): one log (parse/tracelog.py), or a directory of rank logs read
by a pool of forked processes and merged (parse/merge.py). No torch import.

Each process that reads ranks holds a ``RankReader``: it hands each rank back as a ``merge.RankEntry`` whose large
parts are pickled with their digests, the values ranks that compiled alike share pickled once. The pool
(``_Pool``) gives each worker its stride of ranks first (``_strides``), then ranks left to the others
(``_next_rank``), and bounds the bytes of entries a worker has sent and the reader not yet taken (``_send``).
"""

from __future__ import annotations

import copyreg
import gc
import hashlib
import io
import os
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Union

from tcinspect import collector
from tcinspect.derived.divergence import rank_keys
from tcinspect.errors import TraceLogError
from tcinspect.parse import logfiles, memo, merge, tracelog
from tcinspect.parse.merge import RankEntry
from tcinspect.report import OK, CacheLookup, DdpSplit, Graph, IgnoredFile, RankReport, Report, Stages


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
        return tracelog.log_report(path, shown)[0]
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
        return _with_ignored(tracelog.log_report(found.ranks[rank].where, shown, len(ignored))[0], ignored)
    entries = [(r, f.where) for r, f in found.ranks.items()]
    if len(entries) == 1:
        return _with_ignored(tracelog.log_report(entries[0][1], shown, len(ignored))[0], ignored)
    names = {r: f.name for r, f in found.ranks.items()}
    sizes = {r: f.size for r, f in found.ranks.items()}
    return merge.merge_ranks(_map(entries, jobs, sizes), shown, ignored, names, dict(entries))


def _with_ignored(rep: Report, ignored: tuple[IgnoredFile, ...]) -> Report:
    if not ignored or rep.parse is None:
        return rep
    return rep.replace(parse=replace(rep.parse, ignored_files=ignored))


def _ranks(ranks: Mapping[int, object]) -> str:
    from tcinspect.vocabulary import ranks_text

    return ranks_text(list(ranks)).split(" ", 1)[1]


def read_rank(args: tuple[int, str]) -> RankEntry:
    """One rank's entry: its report, or why its log cannot be read (the other ranks are still read), read alone
    (``RankReader`` keeps what ranks share across the ranks one process reads)."""
    return RankReader().read(args)


#: the bytes of pickles of shared values a RankReader keeps, the oldest dropped first (one dropped is pickled again
#: when a rank holds it)
_COMPONENTS_KEPT = 32 << 20
#: the divergence keys a RankReader keeps (the last few)
_KEYS_KEPT = 16


class RankReader:
    """What one process keeps while it reads ranks, to hand each back as a ``RankEntry``: the values ranks that
    compiled alike share, each pickled once, their divergence keys, and in a pool worker the parts it has sent.

    What ranks that compiled alike share by identity (parse/memo.py gives the same object for the same text): the key
    components of a cache look-up (the FX graph cache's key, listed whole: most of a rank's compile-time part) and
    every graph (Dynamo's, AOTAutograd's, Inductor's post-grad: most of the other parts), kept by their id with
    their pickle's digest and the pickle (``_COMPONENTS_KEPT`` bytes of them). A part that holds one carries only
    its digest (merge.Received reads it by it), so a rank that compiled like an earlier one is pickled in a fraction
    of the time."""

    def __init__(self, worker: bool = False) -> None:
        #: the shared values met so far, by id: (the value, its pickle's digest, its pickle)
        self._components: dict[int, tuple[Any, bytes, bytes]] = {}
        self._components_bytes = 0
        #: the shared values the rank being pickled holds: digest -> (digest, pickle)
        self._named: dict[bytes, tuple[bytes, bytes]] = {}
        #: a rank's divergence keys pickled with their digest, by the digests of the parts they follow from: ranks
        #: that compiled alike find them once
        self._keys_made: dict[tuple[bytes, ...], tuple[bytes, bytes]] = {}
        #: ``worker``: in a pool worker, the digests of the parts it has sent: the reader takes each worker's entries
        #: in the order the worker read them (one queue, which keeps each sender's order), so a part is unpickled
        #: from the first entry that carries it and later ones need only its digest
        self._sent: Optional[set[bytes]] = set() if worker else None
        self._dispatch: dict[type, Callable[[Any], Any]] = {**copyreg.dispatch_table, CacheLookup: self._reduce_lookup,
                                                            Graph: self._reduce_graph}

    def read(self, args: tuple[int, str]) -> RankEntry:
        """One rank's entry. Its large parts, equal on ranks that compiled alike, come pickled with a digest, so that
        the reader keeps (and unpickles) each once: in one process too, where this costs about a tenth of the read
        and keeps memory to the distinct parts."""
        rank, path = args
        try:
            rep, splits, origin = tracelog.rank_log_report(path)
        except TraceLogError as exc:
            return RankEntry(rank, exc, (), (), None)
        values = (rep.stages.dynamo, rep.stages.aot_autograd, rep.stages.inductor, rep.compiles, rep.compile_time,
                  splits)
        pickled = []
        self._named.clear()
        for value in values:
            buf = io.BytesIO()
            pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
            pickler.dispatch_table = self._dispatch
            pickler.dump(value)
            data = buf.getvalue()
            pickled.append((hashlib.blake2b(data, digest_size=16).digest(), data))
        # the shared values it holds go first (the parts name them by digest): key components and graphs; then the six
        # parts
        parts = []
        keys = self._keys_pickled(rep, splits, tuple(digest for digest, _ in pickled))
        sent = self._sent
        for digest, data in [*self._named.values(), *pickled, keys]:
            if sent is not None:  # a pool worker: a part it sent before goes back as its digest alone
                if digest in sent:
                    data = b""
                else:
                    sent.add(digest)
            parts.append((digest, data))
        self._named.clear()
        return RankEntry(rank, rep.replace(stages=Stages(), compiles=(), compile_time=None), tuple(parts[:-1]),
                         parts[-1], origin)

    def _keys_pickled(self, rep: Report, splits: tuple[DdpSplit, ...],
                      digests: tuple[bytes, ...]) -> tuple[bytes, bytes]:
        """What the divergence of ranks compares of this rank, found here (in the worker that read it) so that the
        reader only compares the small keys of all ranks. They follow from every part but the compile times."""
        of = digests[:4] + digests[5:]
        kept = self._keys_made.get(of)
        if kept is None:
            keys = rank_keys(RankReport(rank=0, status=OK, stages=rep.stages, compiles=rep.compiles, ddp_splits=splits))
            data = pickle.dumps(keys, protocol=pickle.HIGHEST_PROTOCOL)
            kept = (hashlib.blake2b(data, digest_size=16).digest(), data)
            if len(self._keys_made) >= _KEYS_KEPT:
                del self._keys_made[next(iter(self._keys_made))]
            self._keys_made[of] = kept
        return kept

    def _components_digest(self, value: Any) -> bytes:
        """The digest of a shared value's pickle (made once while the value lives), named for the rank being
        pickled."""
        kept = self._components.get(id(value))
        if kept is None or kept[0] is not value:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            kept = (value, hashlib.blake2b(data, digest_size=16).digest(), data)
            self._components[id(value)] = kept
            self._components_bytes += len(data)
            while self._components_bytes > _COMPONENTS_KEPT and len(self._components) > 1:
                self._components_bytes -= len(self._components.pop(next(iter(self._components)))[2])
        self._named[kept[1]] = (kept[1], kept[2])
        return kept[1]

    def _reduce_graph(self, graph: Graph) -> Any:
        """A graph pickled as its digest (merge.Received.shared reads it by it)."""
        return merge.Received.shared, (self._components_digest(graph),)

    def _reduce_lookup(self, lookup: CacheLookup) -> Any:
        """A cache look-up pickled with its key components as their digest (merge.Received.cache_lookup reads
        them by it)."""
        state = dict(lookup.__dict__)
        if not lookup.components:
            return merge.Received.cache_lookup, (state, None)
        state["components"] = ()
        return merge.Received.cache_lookup, (state, self._components_digest(lookup.components))


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

        from tcinspect.parse import ddp, fromevents  # noqa: F401 - imported once here, not in each forked worker

        tracelog.prepare_decoders()  # once here too, not in each worker
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
    reader = RankReader(worker=True)
    memo.enable()
    gc.disable()  # the worker lives for this reading: see read()
    try:
        while (entry := _next_rank(index, schedule)) is not None:
            read = reader.read(entry)
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
    size = _ENTRY_BYTES + sum(len(data) for _, data in entry.parts) + sum(len(data) for data in entry.keys)
    s = schedule
    with s.taken:
        while s.in_flight[index] and s.in_flight[index] + size > s.budget:
            s.taken.wait(0.5)
        s.in_flight[index] += size
    results.put(("rank", (entry, index, size)))


def _kind_of(entry: RankEntry) -> int:
    """The graphs and key components a rank's entry names (its shared values' digests) as a number: equal for
    ranks that compiled alike on the same GPU, whose graphs a worker that read one has kept (0: none named)."""
    named = sorted(digest for digest, _ in entry.parts[:-6])
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
    reader = RankReader()
    with memo.across_ranks():
        yield from (reader.read(e) for e in entries)
