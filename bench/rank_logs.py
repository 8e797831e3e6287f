"""Write a TORCH_TRACE directory of N ranks from recorded rank logs, as a large job leaves it.

    python bench/rank_logs.py /tmp/ranks1024 --ranks 1024             # from the 2-rank torchrun recording
    python bench/rank_logs.py /tmp/ranks256 --ranks 256 --source h100 # copies of the H100 transformer block

``ddp`` (the default) starts from the two ranks torch logged for ``sample_models/ddp_rank_branch.py`` under
torchrun (torch 2.13, CPU; ``tests/data/torch_trace/torch-2.13.0/ddp_rank_branch``), where rank 1 takes a
branch rank 0 does not: rank ``r`` gets rank 1's log when ``r % 8 == 5`` (one rank in eight diverges), else rank
0's. Outliers, so that the landing view has something to find: the last rank's log is cut at 60% (a rank
killed mid-write), one rank loaded its FX graphs from the cache (its cache records say hit), and rank 3's
log is empty (it compiled nothing). ``h100`` makes every rank a copy of the H100 transformer-block log
(torch 2.11; ``--outliers`` adds the same outliers). Files are named as torch names them
(``dedicated_log_torch_trace_rank_N_XXXXXXXX.log``) and are hard links of the decompressed recordings where
the content is the same, so 1,024 ranks take the disk of a few.

``--vary`` makes each rank's log its own, as the ranks of a real multi-GPU job write them: rank ``r`` ran on
``cuda:{r % 8}`` (eight GPUs a node: every payload naming ``cuda:0``, device index 0 or its device guard names
that device instead) and started ``r`` ms later (every ``ts`` in its Chromium events moved), each changed
payload with its md5 written again; the outliers are made from their own rank's log (the rank cut short logged its
own GPU's text until it was killed). Copies of one log share every payload byte for byte, which a reader that
keeps what it parsed by its text turns into less work than real ranks give it; varied ranks share what real
ranks share (the ranks on the same local GPU index, and nothing of their timings). Every file is then written
in full.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import re
import string
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "torch_trace"
DDP = DATA / "torch-2.13.0" / "ddp_rank_branch"
SOURCES = {
    "ddp": [DDP / "dedicated_log_torch_trace_rank_0_pznkmk13.log.gz", DDP / "dedicated_log_torch_trace_rank_1_yh9colpj.log.gz"],
    "h100": [DATA / "torch-2.11.0-h100" / "transformer_block.log.gz"],
}


def _name(rank: int, rng: random.Random) -> str:
    suffix = "".join(rng.choice(string.ascii_lowercase + string.digits + "_") for _ in range(8))
    return f"dedicated_log_torch_trace_rank_{rank}_{suffix}.log"  # tempfile.mkstemp's 8 characters


def _log_bytes(path: Path) -> bytes:
    """A log given by its path (``--source FILE``: any TORCH_TRACE log, e.g. one of a larger model), .gz or not."""
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


_TS = re.compile(rb'^"ts": ([0-9.]+)', re.M)
#: a record header's glog pid and the rank its JSON states
_PID = re.compile(rb"^([VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +)(\d+)")
_RANK = re.compile(rb'"rank": \d+')
_HAS_PAYLOAD = re.compile(rb'"has_payload": "([0-9a-f]{32})"')


def vary(data: bytes, rank: int, gpus: int = 8) -> bytes:
    """Rank ``rank``'s log made from ``data``: its payloads name ``cuda:{rank % gpus}`` and its Chromium events
    start ``rank`` ms later; every payload changed gets its md5 again (``has_payload``: the md5 of the payload's
    lines without their tab, joined by newlines). Its records state its own rank and a process of its own (the
    glog pid plus ``rank``), as a real rank's do: copies of one process's log are told apart by their bytes, which
    tcinspect reads again (parse/merge.py ``_checksums``)."""
    device = rank % gpus
    swaps = [(b"cuda:0", b"cuda:%d" % device), (b"device(type='cuda', index=0)", b"device(type='cuda', index=%d)" % device),
             (b"_DeviceGuard(0)", b"_DeviceGuard(%d)" % device), (b"set_device(0)", b"set_device(%d)" % device)]
    lines = data.split(b"\n")
    out: list[bytes] = []
    i = 0
    while i < len(lines):
        head = _PID.sub(lambda m: m.group(1) + b"%d" % (int(m.group(2)) + rank), lines[i], count=1)
        head = _RANK.sub(b'"rank": %d' % rank, head)
        i += 1
        start = i
        while i < len(lines) and lines[i].startswith(b"\t"):
            i += 1
        if start == i:
            out.append(head)
            continue
        text = b"\n".join(ln[1:] for ln in lines[start:i])
        new = text
        for old, now in swaps:
            new = new.replace(old, now)
        if rank:
            new = _TS.sub(lambda m: b'"ts": ' + repr(float(m.group(1)) + rank * 1000.0).encode(), new)
        if new != text:
            m = _HAS_PAYLOAD.search(head)
            if m is None or m.group(1).decode() != hashlib.md5(text).hexdigest():
                raise ValueError(f"a payload whose md5 is not has_payload's, before line {start + 1}: not a TORCH_TRACE log?")
            head = head[:m.start(1)] + hashlib.md5(new).hexdigest().encode() + head[m.end(1):]
        out.append(head)
        out.extend(b"\t" + ln for ln in new.split(b"\n"))
    return b"\n".join(out)


def source_name(source: str) -> str:
    """A short name for a source: its own, or a log file's stem."""
    return source if source in SOURCES else Path(source).name.split(".")[0]


def write(directory: Path, ranks: int, source: str = "ddp", outliers: bool = True, seed: int = 0,
          varied: bool = False) -> dict[str, int]:
    """Write the directory; returns how many ranks of each kind it holds (``varied``: see ``vary``)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    recorded = [gzip.decompress(p.read_bytes()) for p in SOURCES[source]] if source in SOURCES else [_log_bytes(Path(source))]
    # the recordings once each, beside the directory (inside it they would be read as logs: by content)
    store = directory.parent / f".{directory.name}-recorded"
    store.mkdir(exist_ok=True)
    originals = []
    for i, data in enumerate(recorded):
        p = store / f"recorded_{i}.log"
        p.write_bytes(data)
        originals.append(p)
    special: dict[int, bytes] = {}
    if outliers and ranks >= 8:
        def base(rank: int) -> bytes:  # what the rank would have logged: its own GPU's text where ranks vary
            return vary(recorded[0], rank) if varied else recorded[0]

        cut = base(ranks - 1)
        special[ranks - 1] = cut[: int(len(cut) * 0.6)]  # killed mid-write
        lines = base(ranks // 2).split(b"\n")  # record headers only: payloads keep their md5
        special[ranks // 2] = b"\n".join(ln if ln.startswith(b"\t") else ln.replace(b'"fx_graph_cache_miss"', b'"fx_graph_cache_hit"')
                                         for ln in lines)
        special[3] = b""
    kinds = {"recorded rank 0": 0, "recorded rank 1": 0, "cut short": 0, "cache hits": 0, "empty": 0}
    for rank in range(ranks):
        path = directory / _name(rank, rng)
        if rank in special:
            path.write_bytes(special[rank])
            kinds["cut short" if rank == ranks - 1 else "empty" if rank == 3 else "cache hits"] += 1
            continue
        which = 1 if len(originals) > 1 and rank % 8 == 5 else 0
        if varied:
            path.write_bytes(vary(recorded[which], rank))
        else:
            os.link(originals[which], path)
        kinds[f"recorded rank {which}"] += 1
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--source", default="ddp", help=f"{', '.join(sorted(SOURCES))}, or the path of a TORCH_TRACE log "
                                                      "(every rank a copy of it)")
    ap.add_argument("--no-outliers", action="store_true")
    ap.add_argument("--vary", action="store_true", help="each rank its own log, as on a multi-GPU job (see above)")
    a = ap.parse_args()
    kinds = write(a.directory, a.ranks, a.source, outliers=not a.no_outliers, varied=a.vary)
    size = sum(p.stat().st_size for p in a.directory.iterdir())
    print(f"{a.directory}: {a.ranks} rank logs, {size / 1e6:.0f} MB of log text ({', '.join(f'{k} {v}' for k, v in kinds.items() if v)})")


if __name__ == "__main__":
    main()
