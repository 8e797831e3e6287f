"""Whether the rank logs of a TORCH_TRACE directory are one run's (pure): each rank's ``LogOrigin`` (what its log
says of the process that wrote it) compared with the others'.

The ranks of one job start together, run one torch and one script, each in its own process, and each log's
records state its own rank. Logs copied in from another day, another torch or another version of the script, or
one log copied under several ranks' names, make a divergence that is the logs', not the job's.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Optional

from tcinspect.report import LogOrigin, MixedRun, RankGroup, RankReport
from tcinspect.vocabulary import ranks_cut

#: first records this far apart are not one job's start (its ranks start within seconds to minutes)
APART_S = 3600
#: glog gives no year: times are placed in a leap year (29 February exists), and compared around its end
_YEAR_S = 366 * 86400
#: events each logged from one line of torch's own code (torch 2.8-2.15): the line a log's first of each was logged
#: from tells torch builds apart (LogOrigin.torch_lines), even where no version is logged; the first named first
ORIGIN_EVENTS = ("dynamo_start", "compilation_metrics", "dynamo_output_graph", "dynamo_cpp_guards_str")
_STARTED = re.compile(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?$")
#: what each sign is called, in the order they are said
TITLES = {"started": "written hours or days apart", "torch": "by another torch",
          "script": "by another version of the script", "process": "several ranks' logs written by one process",
          "copy": "copies of one log", "rank": "records of another rank than the file's"}


def mixed_runs(ranks: Sequence[RankReport]) -> tuple[MixedRun, ...]:
    """The signs that these ranks' logs are not one run's, in ``TITLES`` order; () for one run (or no origins)."""
    known = [(r.rank, r.origin) for r in sorted(ranks, key=lambda r: r.rank) if r.origin is not None]
    if len(known) < 2:
        return ()
    found = [_started(known), _torch(known), _script(known), *_shared(known)]
    return tuple(m for m in found if m is not None)


def _groups(values: Sequence[tuple[int, str]]) -> tuple[RankGroup, ...]:
    """Ranks grouped by value, in the order of each group's first rank."""
    groups: dict[str, list[int]] = {}
    for rank, value in values:
        groups.setdefault(value, []).append(rank)
    return tuple(RankGroup(tuple(ranks), value) for value, ranks in groups.items())


def _seconds(started: str) -> Optional[float]:
    m = _STARTED.match(started)
    if m is None:
        return None
    try:
        when = datetime(2024, int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]))
    except ValueError:
        return None
    return (when - datetime(2024, 1, 1)).total_seconds()


def _started(known: Sequence[tuple[int, LogOrigin]]) -> Optional[MixedRun]:
    """Ranks whose first records are ``APART_S`` or more apart, in clusters of ranks that started together."""
    times = sorted((t, rank, o.started) for rank, o in known if (t := _seconds(o.started)) is not None)
    if len(times) < 2:
        return None
    clusters: list[list[tuple[float, int, str]]] = [[times[0]]]
    for prev, cur in itertools.pairwise(times):
        if cur[0] - prev[0] >= APART_S:
            clusters.append([])
        clusters[-1].append(cur)
    if len(clusters) > 1 and times[0][0] + _YEAR_S - times[-1][0] < APART_S:  # a job that began on 31 December
        clusters[0] = clusters.pop() + clusters[0]
    if len(clusters) < 2:
        return None
    groups = [RankGroup(tuple(sorted(r for _, r, _ in c)), f"first record {c[0][2][:14]}") for c in clusters]
    return MixedRun("started", tuple(sorted(groups, key=lambda g: g.ranks[0])))


def _torch(known: Sequence[tuple[int, LogOrigin]]) -> Optional[MixedRun]:
    """Ranks of other torch versions; where no two versions are logged, of other lines of torch's own code."""
    versions = {o.torch_version for _, o in known if o.torch_version}
    if len(versions) > 1:
        return MixedRun("torch", _groups([(r, o.torch_version or "version not logged") for r, o in known]))
    lined = [(r, {e: at for e, _, at in (line.partition(" ") for line in o.torch_lines)})
             for r, o in known if o.torch_lines]
    if len(lined) < 2:
        return None
    common = set.intersection(*(set(lines) for _, lines in lined))  # the events every rank logged
    differ = sorted((e for e in common if len({lines[e] for _, lines in lined}) > 1),
                    key=lambda e: (ORIGIN_EVENTS.index(e) if e in ORIGIN_EVENTS else len(ORIGIN_EVENTS), e))
    if not differ:
        return None
    version = next(iter(versions), "")
    said = f"torch {version}" if version else "torch version not logged"
    more = f" (and {len(differ) - 1} more of torch's own lines)" if len(differ) > 1 else ""
    return MixedRun("torch", _groups([(r, f"{said}; {differ[0]} logged at {lines[differ[0]]}{more}")
                                      for r, lines in lined]))


def _script(known: Sequence[tuple[int, LogOrigin]]) -> Optional[MixedRun]:
    """Ranks whose first compile was started from another line (or file) of the script."""
    scripts = [(r, o.script) for r, o in known if o.script]
    if len({s for _, s in scripts}) < 2:
        return None
    short = {s: s.rsplit("/", 1)[-1] for _, s in scripts}
    named = short if len(set(short.values())) == len(short) else {s: s for s in short}  # basenames when distinct
    return MixedRun("script", _groups([(r, f"first compile from {named[s]}") for r, s in scripts]))


def _shared(known: Sequence[tuple[int, LogOrigin]]) -> list[MixedRun]:
    """Logs written by one process (pid and first record's time alike), copies (the same text), and records that
    state another rank than the file's."""
    out = []
    by_text: dict[tuple[int, str], list[int]] = {}
    by_process: dict[tuple[int, str], list[int]] = {}
    for rank, o in known:
        if o.crc32 and o.size:
            by_text.setdefault((o.size, o.crc32), []).append(rank)
        if o.pid and o.started:
            by_process.setdefault((o.pid, o.started), []).append(rank)
    copies = {tuple(ranks) for ranks in by_text.values() if len(ranks) > 1}
    process = [RankGroup(tuple(ranks), f"pid {pid}, first record {started}")
               for (pid, started), ranks in by_process.items() if len(ranks) > 1 and tuple(ranks) not in copies]
    if process:
        out.append(MixedRun("process", tuple(process)))
    if copies:
        out.append(MixedRun("copy", tuple(RankGroup(tuple(ranks), f"{size:,} bytes, CRC-32 {crc}")
                                          for (size, crc), ranks in by_text.items() if tuple(ranks) in copies)))
    other = _groups([(r, f"records say rank {o.records_rank}") for r, o in known
                     if o.records_rank is not None and o.records_rank != r])
    if other:
        out.append(MixedRun("rank", other))
    return out


def mixed_runs_text(mixed: Sequence[MixedRun]) -> str:
    """One line: why these rank logs look like more than one run's ("" when they look like one)."""
    if not mixed:
        return ""
    said = "; ".join(f"{TITLES.get(m.what, m.what)} ("
                     + "; ".join(f"{ranks_cut(g.ranks, 4)}: {g.value}" for g in m.groups[:4])
                     + (f"; … {len(m.groups) - 4} more" if len(m.groups) > 4 else "") + ")" for m in mixed)
    return (f"these rank logs are not one run's: {said} — where ranks differ, it may be the logs that differ, not "
            "the job's ranks")
