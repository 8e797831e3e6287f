"""How fast tcinspect reads TORCH_TRACE logs: MB/s per core, peak RSS, and 8 to 64 ranks.

    python bench/torchtrace_read.py [--log PATH ...] [--runs N] [--ranks 8,16,32,64] [--repeat K]

Rows (the logs are decompressed first; MB = 10^6 bytes of log text):

- per log: parse MB/s (records -> events: glog prefix, JSON, md5 of every payload, the payloads the
  report needs decoded) and read MB/s (the whole report: events -> stages, graphs, kernels, compile
  time), best of ``--runs``, in this one process (one core).
- peak RSS (``os.wait4``'s ru_maxrss of a child process) reading one log, then a log made of its
  records repeated ``--repeat`` times: streaming the events without keeping them (what the reader
  itself holds), and the whole report (which keeps every graph and kernel it shows).
- ranks: a directory of copies of the first log named as torch names rank logs, read by
  ``tcinspect.parse.rankpool.read`` in a child process, in one process and with a pool of one
  worker per core: wall time (start-up and the merge included) and seconds per rank.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "torch_trace"
DEFAULT_LOGS = [DATA / "torch-2.11.0-h100" / "transformer_block.log.gz", DATA / "torch-2.13.0" / "graph_breaks.log.gz"]


def _plain(src: Path, dest: Path) -> Path:
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rb") as fh, open(dest, "wb") as out:
        shutil.copyfileobj(fh, out)
    return dest


def _child(code: str, *args: str) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of ``python -c code args`` (its pool workers included)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child failed: {code}")
    return wall, usage.ru_maxrss / 1024


def _repeated(log: Path, times: int, dest: Path) -> Path:
    data = log.read_bytes()
    with open(dest, "wb") as out:
        for _ in range(times):
            out.write(data)
    return dest


def _largest_payload(log: Path) -> int:
    from tcinspect.parse import tracelog

    health = tracelog.LogHealth()
    with open(log, "rb") as fh:
        return max(len(rec) for rec, _ in tracelog._records(fh, health))


def _timed_rank(entry: tuple[int, str]) -> float:
    """Seconds to read one rank's report (run in the pool's workers, or in this process)."""
    from tcinspect.parse import rankpool

    start = time.perf_counter()
    rankpool.read_rank(entry)
    return time.perf_counter() - start


def _inside(directory: Path, n: int, jobs: int) -> float:
    """The sum of the per-rank times, read by ``jobs`` processes (forked, as the reader's pool is)."""
    entries = [(r, str(directory / f"dedicated_log_torch_trace_rank_{r}_bench.log")) for r in range(n)]
    if jobs == 1:
        return sum(_timed_rank(e) for e in entries)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return sum(pool.map(_timed_rank, entries))


STREAM = ("import sys; from tcinspect.parse import tracelog as t; h = t.LogHealth(); "
          "n = sum(1 for _ in t.iter_events(sys.argv[1], h)); assert n")
REPORT = "import sys; from tcinspect.parse import rankpool as t; t.read(sys.argv[1], jobs=int(sys.argv[2]))"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log", action="append", type=Path, help="a TORCH_TRACE log (.gz too); repeatable")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--ranks", default="8,16,32,64")
    ap.add_argument("--repeat", type=int, default=16)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from tcinspect.parse import rankpool, tracelog

    cores = os.cpu_count() or 1
    print(f"python {sys.version.split()[0]} · {cores} cores · {os.uname().machine}")
    with tempfile.TemporaryDirectory(prefix="tcinspect-bench-") as tmp:
        t = Path(tmp)
        logs = [_plain(p, t / p.name.removesuffix(".gz")) for p in (args.log or DEFAULT_LOGS)]
        rankpool.read(logs[0])  # imports, once
        print("\n| log | MB | records | parse MB/s | read (report) MB/s |\n|---|---:|---:|---:|---:|")
        for log in logs:
            parse = read = float("inf")
            for _ in range(args.runs):
                start = time.perf_counter()
                _, health = tracelog.read_log(log)
                parse = min(parse, time.perf_counter() - start)
                start = time.perf_counter()
                rankpool.read(log)
                read = min(read, time.perf_counter() - start)
            mb = health.bytes_read / 1e6
            print(f"| {log.name} | {mb:.2f} | {health.records} | {mb / parse:.0f} | {mb / read:.0f} |")

        first = logs[0]
        big = _repeated(first, args.repeat, t / f"x{args.repeat}-{first.name}")
        print("\n| peak RSS of a child reading | log MB | largest record MB | stream events MB | whole report MB |"
              "\n|---|---:|---:|---:|---:|")
        _, base = _child("pass")
        print(f"| python -c pass (the interpreter) | | | {base:.0f} | |")
        for log, what in ((first, first.name), (big, f"{first.name} × {args.repeat}")):
            _, stream = _child(STREAM, str(log))
            _, whole = _child(REPORT, str(log), "1")
            print(f"| {what} | {log.stat().st_size / 1e6:.1f} | {_largest_payload(log) / 1e6:.2f} | {stream:.0f} | "
                  f"{whole:.0f} |")

        print(f"\n| ranks (copies of {first.name}) | MB | processes | wall s | s per rank | MB/s | MB/s per core | "
              "peak RSS MB |\n|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in (int(x) for x in args.ranks.split(",")):
            d = t / f"ranks{n}"
            d.mkdir()
            for rank in range(n):
                os.link(first, d / f"dedicated_log_torch_trace_rank_{rank}_bench.log")
            mb = n * first.stat().st_size / 1e6
            for jobs in sorted({1, cores}):
                wall, rss = _child(REPORT, str(d), str(jobs))
                print(f"| {n} | {mb:.0f} | {jobs} | {wall:.2f} | {wall / n:.3f} | {mb / wall:.0f} | {mb / wall / jobs:.0f} "
                      f"| {rss:.0f} |")
        if cores > 1:
            alone, pooled = _inside(d, n, 1), _inside(d, n, cores)
            print(f"\nper-rank read time of the {n} ranks, summed: {alone:.2f} s in one process, {pooled:.2f} s inside "
                  f"{cores} pool workers ({pooled / alone:.2f}×: the workers' share of the cores)")
        print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes share the cores)")


if __name__ == "__main__":
    main()
