#!/usr/bin/env python
"""The fixed cost of inspecting: `tcinspect trace MODEL` beside a bare `torch.compile` of the same model, warm.

    python bench/fixed_cost.py sample_models/tiny.py --runs 9

Sides, each a subprocess in the scrubbed environment of bench/runner.py, one Inductor cache they all share
(filled by an untimed run of each first), run in turn (bare, trace, trace without the child started ahead,
start-up, bare, ...):

- bare: ``bench/bare_compile.py`` (the model compiled and called, with its backward: what trace runs);
- trace: ``tcinspect trace MODEL --format yaml -o FILE``, with an empty report cache each run (never a reused report);
- trace, no prewarm: the same with ``TCINSPECT_NO_PREWARM=1`` (the capture's child started only once the command
  line is parsed, as before capturing/prewarm.py);
- start-up: ``tcinspect --version`` (the interpreter and the CLI's imports; no torch).

``--sides`` picks the sides (bare and trace always run). Printed: each side's median wall time with its range, and
each trace side's ratio to bare (the median of the per-round ratios, with their range). The target is trace / bare
<= 1.05.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner import Dirs, base_env, inductor_env, run_once

REPO = Path(__file__).resolve().parent.parent
#: --sides words -> the sides' names as printed
SIDES = {"bare": "bare", "trace": "trace", "trace-no-prewarm": "trace, no prewarm", "start-up": "start-up"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(REPO / "sample_models" / "tiny.py"))
    ap.add_argument("--model-name", default="model")
    ap.add_argument("--inputs-name", default="example_inputs")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--sides", default=",".join(SIDES),
                    help=f"the sides to run, comma-separated (bare and trace always run): {','.join(SIDES)}")
    a = ap.parse_args()
    asked = {w.strip() for w in a.sides.split(",") if w.strip()}
    if asked - SIDES.keys():
        ap.error(f"unknown side {sorted(asked - SIDES.keys())[0]!r}: choose from {','.join(SIDES)}")
    wanted = {SIDES[w] for w in asked} | {"bare", "trace"}
    model = Path(a.model).resolve()
    dirs = Dirs(keep=False)
    try:
        env = inductor_env(base_env(), dirs.new("inductor"))
        tc = [sys.executable, "-m", "tcinspect"]

        def bare() -> tuple[list[str], dict]:
            return [sys.executable, str(REPO / "bench" / "bare_compile.py"), str(model), a.model_name,
                    a.inputs_name], env

        def trace(prewarm: bool) -> tuple[list[str], dict]:
            e = dict(env, TCINSPECT_CACHE_DIR=str(dirs.new("tccache")))
            if not prewarm:
                e["TCINSPECT_NO_PREWARM"] = "1"
            return [*tc, "trace", str(model), "--model", a.model_name, "--inputs", a.inputs_name,
                    "--format", "yaml", "-o", str(dirs.new("out") / "report.yaml")], e

        sides = {"bare": bare, "trace": lambda: trace(True), "trace, no prewarm": lambda: trace(False),
                 "start-up": lambda: ([*tc, "--version"], env)}
        sides = {k: v for k, v in sides.items() if k in wanted}
        times: dict[str, list[float]] = {k: [] for k in sides}
        for name, make in sides.items():
            cmd, e = make()
            run_once(cmd, e, dirs.cwd, a.timeout, label=f"{name} (warm-up)")
        for i in range(a.runs):
            for name, make in sides.items():
                cmd, e = make()
                times[name].append(run_once(cmd, e, dirs.cwd, a.timeout, label=f"{name} run {i + 1}").seconds)
            print(f"  round {i + 1}/{a.runs}: " + "  ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
                  flush=True)
    finally:
        dirs.cleanup()
    import torch

    print(f"\nmachine: {platform.platform()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
          f"Python {platform.python_version()}, torch {torch.__version__}; {model.name}, {a.runs} rounds\n")
    for name, ts in times.items():
        print(f"{name:18s} {statistics.median(ts):6.2f} s ({min(ts):.2f}-{max(ts):.2f})")
    for name in [n for n in ("trace", "trace, no prewarm") if n in times]:
        ratios = [x / y for x, y in zip(times[name], times["bare"])]
        met = "met" if statistics.median(ratios) <= 1.05 else "not met"
        print(f"{name} / bare: {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"
              + (f"; target <= 1.05: {met}" if name == "trace" else ""))


if __name__ == "__main__":
    main()
