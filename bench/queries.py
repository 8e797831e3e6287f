#!/usr/bin/env python
"""Queries of a large saved report, each a fresh ``tcinspect`` process, in turn, in one run.

    python bench/llm_report.py 17 /tmp/llm17.yaml      # a generated 15 MB report (or one recorded on a GPU)
    python bench/queries.py /tmp/llm17.yaml --runs 7

Each query (``codegen``, ``breaks``, ``trace --stage summary``, ``guards``, ``trace`` with every table, ``check``,
``compile-time``, ``shapes``, ``memory``, ``codegen --kernel K`` for the report's first generated kernel, ``diff``
of the report with itself) runs as a subprocess in the scrubbed environment of bench/runner.py, with one report
cache for the whole run: one untimed ``trace --stage summary`` first writes the report's JSON twin and Python's
bytecode cache, as any earlier query would have. Then ``--runs`` rounds, each query once a round, in turn, so that
a busy moment falls on all of them. ``python -c pass`` is timed beside them: the interpreter's own start.

Printed: the machine, the report's size, and each query's median wall time with its range. The target is a median
of at most ``--limit`` seconds (1.0) for every query; the script exits 1 when one is over it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner import Dirs, base_env, run_once

QUERIES = (
    ("codegen",), ("breaks",), ("trace", "--stage", "summary"), ("guards",), ("trace",),
    ("check", "--max-graph-breaks", "0"), ("compile-time",), ("shapes",), ("memory",),
)


def _first_kernel(report: Path, env: dict, cwd: Path) -> str:
    """The name of the report's first kernel that is not an extern call ("" when it has none)."""
    done = subprocess.run([sys.executable, "-m", "tcinspect", "codegen", str(report), "-f", "json"], env=env,
                          cwd=str(cwd), capture_output=True, text=True, check=False)
    try:
        outputs = json.loads(done.stdout).get("outputs", [])
    except ValueError:
        return ""
    return next((k["name"] for o in outputs for k in o.get("kernels", []) if k.get("kind") != "extern"), "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a saved report (.yaml or .json)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--limit", type=float, default=1.0, help="the target: each query's median at most this (s)")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    report = Path(a.report).resolve()
    if not report.is_file():
        raise SystemExit(f"no such report: {report} (write one: python bench/llm_report.py 17 FILE.yaml)")
    dirs = Dirs(keep=False)
    try:
        env = dict(base_env(), TCINSPECT_CACHE_DIR=str(dirs.new("cache")))
        tc = [sys.executable, "-m", "tcinspect"]
        run_once([*tc, "trace", str(report), "--stage", "summary"], env, dirs.cwd, a.timeout,
                 label="trace --stage summary (untimed: the twin and the bytecode)")
        queries = {" ".join(q): [*tc, *q, str(report)] for q in QUERIES}
        kernel = _first_kernel(report, env, dirs.cwd)
        if kernel:
            queries["codegen --kernel K"] = [*tc, "codegen", str(report), "--kernel", kernel]
        queries["diff A A"] = [*tc, "diff", str(report), str(report)]
        queries["python -c pass"] = [sys.executable, "-c", "pass"]
        times: dict[str, list[float]] = {k: [] for k in queries}
        for i in range(a.runs):
            for name, cmd in queries.items():
                # check exits 1 on a report with breaks: its verdict, not a failure of the query
                times[name].append(run_once(cmd, env, dirs.cwd, a.timeout, ok_codes=(0, 1),
                                            label=f"{name} run {i + 1}").seconds)
    finally:
        dirs.cleanup()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
          f"Python {platform.python_version()}; {report.name}, {report.stat().st_size / 1e6:.1f} MB; "
          f"{a.runs} rounds, each query a fresh process\n")
    over = []
    for name, ts in times.items():
        median = statistics.median(ts)
        print(f"{name:28s} {median:6.3f} s ({min(ts):.3f}-{max(ts):.3f})")
        if name != "python -c pass" and median > a.limit:
            over.append(name)
    print(f"\nevery query's median <= {a.limit:g} s: " + ("met" if not over else f"not met ({', '.join(over)})"))
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
