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
``--against SRC`` (another checkout's ``src/``) runs each query with that tcinspect too, right beside this one's (each
first in every other round, each with its own report cache), and prints its median and the median of the per-round
ratios.

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


def _env_for(src: Path | None, cache: Path) -> dict:
    """The scrubbed environment of a query; ``src``: another tcinspect source tree, found first on the path."""
    env = dict(base_env(), TCINSPECT_CACHE_DIR=str(cache))
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _version(env: dict, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", "import tcinspect, os; print(os.path.dirname(tcinspect.__file__))"],
                          env=env, cwd=str(cwd), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a saved report (.yaml or .json)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--limit", type=float, default=1.0, help="the target: each query's median at most this (s)")
    ap.add_argument("--against", metavar="SRC", type=Path,
                    help="another tcinspect's source directory (the src/ of a checkout of an earlier commit): each "
                         "query also runs with it, right after (or before) this one's, and the ratio is printed")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    report = Path(a.report).resolve()
    if not report.is_file():
        raise SystemExit(f"no such report: {report} (write one: python bench/llm_report.py 17 FILE.yaml)")
    if a.against is not None and not (a.against / "tcinspect" / "__init__.py").is_file():
        raise SystemExit(f"--against {a.against}: no tcinspect package in it (give a checkout's src directory)")
    dirs = Dirs(keep=False)
    sides = {"this": None} if a.against is None else {"this": None, "against": a.against.resolve()}
    try:
        envs = {side: _env_for(src, dirs.new(f"cache-{side}")) for side, src in sides.items()}
        places = {side: _version(env, dirs.cwd) for side, env in envs.items()}
        tc = [sys.executable, "-m", "tcinspect"]
        for side, env in envs.items():
            run_once([*tc, "trace", str(report), "--stage", "summary"], env, dirs.cwd, a.timeout,
                     label=f"trace --stage summary, {side} (untimed: the twin and the bytecode)")
        queries = {" ".join(q): [*tc, *q, str(report)] for q in QUERIES}
        kernel = _first_kernel(report, envs["this"], dirs.cwd)
        if kernel:
            queries["codegen --kernel K"] = [*tc, "codegen", str(report), "--kernel", kernel]
        queries["diff A A"] = [*tc, "diff", str(report), str(report)]
        queries["python -c pass"] = [sys.executable, "-c", "pass"]
        times: dict[str, dict[str, list[float]]] = {side: {k: [] for k in queries} for side in sides}
        for i in range(a.runs):
            for name, cmd in queries.items():
                order = list(sides) if i % 2 == 0 else list(reversed(sides))  # each side first in every other round
                for side in order:
                    # check exits 1 on a report with breaks: its verdict, not a failure of the query
                    times[side][name].append(run_once(cmd, envs[side], dirs.cwd, a.timeout, ok_codes=(0, 1),
                                                      label=f"{name} ({side}) run {i + 1}").seconds)
    finally:
        dirs.cleanup()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
          f"Python {platform.python_version()}; {report.name}, {report.stat().st_size / 1e6:.1f} MB; "
          f"{a.runs} rounds, each query a fresh process")
    for side, place in places.items():
        print(f"  {side}: tcinspect from {place}")
    print()
    over = []
    for name in queries:
        ts = times["this"][name]
        median = statistics.median(ts)
        line = f"{name:28s} {median:6.3f} s ({min(ts):.3f}-{max(ts):.3f})"
        if "against" in times:
            old = times["against"][name]
            ratios = [t / o for t, o in zip(ts, old)]
            line += (f"   against {statistics.median(old):6.3f} s ({min(old):.3f}-{max(old):.3f})"
                     f"   this/against {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        print(line)
        if name != "python -c pass" and median > a.limit:
            over.append(name)
    print(f"\nevery query's median <= {a.limit:g} s: " + ("met" if not over else f"not met ({', '.join(over)})"))
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
