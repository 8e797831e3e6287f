"""How reading a TORCH_TRACE directory scales with ranks and cores: time, MB/s per core, speed-up, peak RSS.

    python bench/rank_scaling.py                                  # 64, 256 and 1,024 ranks, --jobs 1 and every core
    python bench/rank_scaling.py --ranks 256 --jobs 1,16 --source h100 --runs 3   # the 16-core row
    python bench/rank_scaling.py --ranks 256 --jobs 1,16 --source /tmp/trace/big.log   # any log (record_rank_log.py)

Self-contained: the directories are written by ``bench/rank_logs.py`` from the ranks recorded in
``tests/data/torch_trace`` (no network, no torch). Each read is ``tcinspect.parse.rankpool.read(DIR,
jobs=J)`` in a fresh child process (``python -c``), so the time includes the interpreter's start, listing the
directory, every rank's report, the merge and the divergence of all ranks (found once as they merge; the landing
view reads it from the report); peak RSS is the child's (``os.wait4``'s ``ru_maxrss``: the process that holds the
merged report), and a worker's is the largest of its pool workers' (``RUSAGE_CHILDREN`` in the child).
CPU s is the child's CPU time with its pool workers' (user + system: on a machine other jobs share, MB per CPU
second is the reader's own rate where wall time is not); the reader's own CPU s is the child's alone (its start,
imports, listing the directory, taking in the workers' results, the merge and the divergence: the serial part that
more workers do not shorten). MB = 10^6 bytes of log text. The rows give the best of ``--runs``; the growth exponent is the least-squares
slope of log time (and log RSS) on log ranks, over the rank counts of one ``--jobs``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import rank_logs  # noqa: E402 - bench/ is not a package

CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from tcinspect.parse import rankpool
rep = rankpool.read(sys.argv[1], jobs=int(sys.argv[2]) or None)
divs = rep.divergence  # found as the ranks were merged, as the landing view reads it
wall = time.perf_counter() - start
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
own = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"ranks": len(rep.ranks), "divergences": len(divs), "inside_s": wall, "workers_rss_mb": workers,
                  "parent_cpu_s": own.ru_utime + own.ru_stime}))
"""


def _run(directory: Path, jobs: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(directory), str(jobs)], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"reading {directory} with --jobs {jobs} failed")
    got = json.loads(out)
    # the child's CPU time and its pool workers' (reaped by the child, so counted in its usage)
    got.update(wall_s=wall, rss_mb=usage.ru_maxrss / 1024, cpu_s=usage.ru_utime + usage.ru_stime)
    return got


#: the control's work: pure-Python JSON decoding, no tcinspect, nothing shared between processes
_DOC = json.dumps([{"name": f"k{i}", "ts": i * 1.5, "args": {"a": [1, 2, 3], "b": "x" * 40}} for i in range(20000)])


def _decode(times: int) -> float:
    start = time.perf_counter()
    for _ in range(times):
        json.loads(_DOC)
    return time.perf_counter() - start


def control(jobs: int, times: int = 40) -> float:
    """The machine's own ceiling: the throughput ``jobs`` processes doing the same independent pure-Python work
    (JSON decoding, nothing shared) get, over one process's. A speed-up is read against it: where ``jobs``
    busy cores run each one slower (a shared or virtual machine, a clock that drops with load), no reader gets
    ``jobs``×."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    one = _decode(times)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_decode, [1] * jobs))  # the workers started
        start = time.perf_counter()
        list(pool.map(_decode, [times] * jobs))
        wall = time.perf_counter() - start
    return jobs * one / wall


def _slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--jobs", default="", help="comma-separated; 0 is the reader's default (one per idle core); "
                                                 "default: 1 and every core")
    ap.add_argument("--source", default="ddp", help=f"{', '.join(sorted(rank_logs.SOURCES))}, or the path of a "
                                                      "TORCH_TRACE log (every rank a copy of it)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-control", action="store_true",
                    help="leave out the control (the speed-up of independent pure-Python work on the same cores)")
    ap.add_argument("--keep", type=Path, help="write the directories here and keep them")
    ap.add_argument("--vary", action="store_true", help="each rank's log its own, as on a multi-GPU job "
                                                        "(bench/rank_logs.py --vary); default: copies")
    args = ap.parse_args()
    # the package's bytecode written first, as installing it does: a child that compiles tcinspect's modules on
    # every start (PYTHONDONTWRITEBYTECODE, a read-only checkout) would time Python's compiler, not the reader
    compileall.compile_dir(ROOT / "src" / "tcinspect", quiet=1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    # the speed-up is over the first; 0 (the reader's own choice) last
    jobs = sorted({int(j) for j in args.jobs.split(",")} if args.jobs else {1, cores}, key=lambda j: (j == 0, j))
    counts = [int(n) for n in args.ranks.split(",")]
    print(f"python {sys.version.split()[0]} · {cores} cores · {os.uname().machine} · source {args.source}{' (varied ranks)' if args.vary else ''} · "
          f"best of {args.runs}")
    print("\n| ranks | MB | --jobs | wall s | s per rank | MB/s | MB/s per core | speed-up | peak RSS MB | a worker's MB "
          "| CPU s | MB per CPU s | the reader's own CPU s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows: dict[int, list[tuple[int, float, float]]] = {j: [] for j in jobs}
    checks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tcinspect-ranks-") as tmp:
        base = args.keep or Path(tmp)
        for n in counts:
            d = base / f"ranks{n}-{rank_logs.source_name(args.source)}{'-varied' if args.vary else ''}"
            if not d.exists():
                rank_logs.write(d, n, args.source, varied=args.vary)
            mb = sum(p.stat().st_size for p in d.iterdir()) / 1e6
            first = 0.0
            for j in jobs:
                runs = [_run(d, j) for _ in range(args.runs)]
                best = min(runs, key=lambda r: r["wall_s"])
                wall, rss = best["wall_s"], min(r["rss_mb"] for r in runs)
                worker = f"{best['workers_rss_mb']:.0f}" if j > 1 else ""
                first = first or wall
                rows[j].append((n, wall, rss))
                if j > 1:  # the targets of a many-core machine
                    checks.append(f"{n} ranks, --jobs {j}: {mb / wall / j:.0f} MB/s per core (target ≥ 50: "
                                  f"{'met' if mb / wall / j >= 50 else 'not met'}), speed-up {first / wall:.2f}× "
                                  f"(target ≥ 0.7 × {j} = {0.7 * j:.1f}: {'met' if first / wall >= 0.7 * j else 'not met'})")
                per_core = f"{mb / wall / j:.0f}" if j else ""
                print(f"| {n:,} | {mb:.0f} | {j or 'default'} | {wall:.2f} | {wall / n:.4f} | {mb / wall:.0f} | {per_core} | "
                      f"{first / wall:.2f}× | {rss:.0f} | {worker} | {best['cpu_s']:.2f} | {mb / best['cpu_s']:.0f} | "
                      f"{best['parent_cpu_s']:.2f} |",
                      flush=True)
    if len(counts) > 1:
        print()
        for j, got in rows.items():
            ns = [float(n) for n, _, _ in got]
            print(f"--jobs {j}: growth exponent with ranks (log-log least squares): time "
                  f"{_slope(ns, [w for _, w, _ in got]):.2f}, peak RSS {_slope(ns, [r for _, _, r in got]):.2f}")
    if checks:
        print("\n" + "\n".join(checks))
    if not args.no_control:
        for j in jobs:
            if j > 1:
                print(f"control: {j} processes of independent pure-Python work (JSON decoding, no tcinspect) get "
                      f"{control(j):.2f}× one process's throughput on this machine")
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
