#!/usr/bin/env python
"""A TORCH_TRACE log to its HTML page: ``tcinspect trace LOG -o page.html`` beside tlparse writing its HTML
directory for the same log, interleaved, in one run.

    TORCH_TRACE=/tmp/trace python bench/record_rank_log.py --layers 12    # a 12-layer GPT-2's log, about 18 MB
    python bench/log_html.py /tmp/trace/dedicated_log_torch_trace_*.log --runs 7

Each side runs as a subprocess in the scrubbed environment of bench/runner.py (Python writes and reads its
bytecode cache, as an installed tcinspect does), once untimed to warm the file cache and the bytecode, then
``--runs`` times in turn (A B A B ...). Printed: each side's median wall time with its range, its CPU time
(user + system, from ``os.wait4``: Graphviz's ``dot`` processes included, as the page's pictures need them)
and peak RSS, and the ratio tcinspect ÷ tlparse (the median of the per-pair ratios, with their range). The
target is a ratio of at most 1.0. Without tlparse (``pip install tlparse``) only tcinspect is timed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner import base_env

REPO = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the command and its children, peak RSS MB) of one run; exits on a failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"failed with exit code {proc.returncode}: {' '.join(cmd)}\n{err[-2000:]}")
    # wait4's usage is the child's own with that of the children it waited for (Graphviz's dot)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="a TORCH_TRACE log (bench/record_rank_log.py records one)")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    log = Path(a.log).resolve()
    if not log.is_file():
        raise SystemExit(f"no such log: {log} (record one: TORCH_TRACE=/tmp/trace python bench/record_rank_log.py)")
    env = base_env()
    tlparse = shutil.which("tlparse")
    with tempfile.TemporaryDirectory(prefix="tcinspect-loghtml-") as tmp:
        work = Path(tmp)
        env["TCINSPECT_CACHE_DIR"] = str(work / "cache")
        sides = {"tcinspect": [sys.executable, "-m", "tcinspect", "trace", str(log), "-o", str(work / "page.html")]}
        if tlparse:
            sides["tlparse"] = [tlparse, str(log), "-o", str(work / "tlparse"), "--overwrite", "--no-browser"]
        results: dict[str, list[tuple[float, float, int]]] = {k: [] for k in sides}
        for cmd in sides.values():
            _timed(cmd, env, work)  # warm: the file cache, Python's bytecode cache
        for _ in range(a.runs):
            for name, cmd in sides.items():
                results[name].append(_timed(cmd, env, work))
        page_mb = (work / "page.html").stat().st_size / 1e6
    version = subprocess.run([sys.executable, "-m", "tcinspect", "--version"], capture_output=True, text=True,
                             env=env).stdout.strip()
    tl_version = subprocess.run([tlparse, "--version"], capture_output=True, text=True).stdout.strip() if tlparse else ""
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
          f"Python {platform.python_version()}; {version}; {tl_version or 'tlparse not installed'}")
    print(f"log: {log.name}, {log.stat().st_size / 1e6:.1f} MB; tcinspect's page {page_mb:.1f} MB; "
          f"{a.runs} runs each, interleaved\n")
    for name, rows in results.items():
        walls = [w for w, _, _ in rows]
        print(f"{name:10s} wall {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f})  "
              f"CPU {statistics.median(c for _, c, _ in rows):.2f} s  peak RSS {max(r for _, _, r in rows)} MB")
    if "tlparse" in results:
        ratios = [a_[0] / b[0] for a_, b in zip(results["tcinspect"], results["tlparse"])]
        ratio = statistics.median(ratios)
        print(f"\ntcinspect / tlparse: {ratio:.2f} ({min(ratios):.2f}-{max(ratios):.2f}); target <= 1.0: "
              f"{'met' if ratio <= 1.0 else 'not met'}")


if __name__ == "__main__":
    main()
