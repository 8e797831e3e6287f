"""Warm start, side by side: the user's plain warm run against `tcinspect compile-time` on the same cache.

    python bench/warm_start.py [--runs N] [MODEL.py ...]

One Inductor cache directory per model file is filled by a plain run first. Then, alternating run by run
(so a drifting machine affects both alike), each in a fresh process on that same warm cache:

- plain: ``torch.compile(model)(*example_inputs)`` (+ backward when the output requires grad), as the
  user runs it; its compile time is torch's own ``compilation_metrics`` (``entire_frame_compile_time_s``
  of each forward compile plus the ``duration_us`` of each backward compile), its FX graph cache hits
  torch's ``counters``;
- tcinspect: ``python -m tcinspect compile-time MODEL.py --format json`` with an empty report cache (so it
  compiles), its ``total_s`` (the same records, read from the structured trace) and its look-ups.

Prints each pair, the medians and the ratio tcinspect / plain of the warm compile time (the target is
0.90-1.10), and both wall times (the process, start to end).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, runpy, sys, torch
from torch._dynamo.utils import counters, get_compilation_metrics
ns = runpy.run_path(sys.argv[1])
inputs = ns["example_inputs"]() if callable(ns["example_inputs"]) else ns["example_inputs"]
out = torch.compile(ns["model"])(*inputs)
if isinstance(out, torch.Tensor) and out.requires_grad:
    out.sum().backward()
ms = get_compilation_metrics()
compile_s = sum(m.entire_frame_compile_time_s or 0 for m in ms if m.is_forward is not False) + \
    sum((m.duration_us or 0) / 1e6 for m in ms if m.is_forward is False)
print(json.dumps({"compile_s": compile_s, "fx": dict(counters["inductor"]), "aot": dict(counters["aot_autograd"])}))
"""


def _states(counted: dict[str, int], prefix: str) -> str:
    return " ".join(f"{counted[k]} {k[len(prefix):]}" for k in sorted(counted) if k.startswith(prefix)) or "-"


def plain(model: Path, cache: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(model)], env=env, check=True, capture_output=True,
                         text=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["wall_s"] = time.perf_counter() - start
    data["states"] = f"FX {_states(data['fx'], 'fxgraph_cache_')}, AOT {_states(data['aot'], 'autograd_cache_')}"
    return data


def tcinspect(model: Path, cache: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="warm-bench-reports-") as reports:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TCINSPECT_CACHE_DIR=reports,
                   PYTHONPATH=str(ROOT / "src"))
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "tcinspect", "compile-time", str(model), "--format", "json"],
                             env=env, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - start
    data = json.loads(out.stdout)
    counted: dict[str, int] = {}
    for e in data["cache_lookups"]:
        name = ("fxgraph_cache_" if e["cache"] == "fx_graph" else "autograd_cache_") + e["state"]
        counted[name] = counted.get(name, 0) + 1
    return {"compile_s": data["total_s"], "wall_s": wall,
            "states": f"FX {_states(counted, 'fxgraph_cache_')}, AOT {_states(counted, 'autograd_cache_')}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("models", nargs="*", default=[str(ROOT / "sample_models" / "gelu_linear.py")])
    args = ap.parse_args()
    for m in args.models:
        model = Path(m)
        with tempfile.TemporaryDirectory(prefix="warm-bench-inductor-") as cache:
            filled = plain(model, cache)
            print(f"{model.name}: cache filled by a plain run ({filled['states']}, compile {filled['compile_s']:.3f} s)")
            rows: dict[str, list[dict]] = {"plain": [], "tcinspect": []}
            for i in range(args.runs):
                for name, run in (("plain", plain), ("tcinspect", tcinspect)):
                    r = run(model, cache)
                    rows[name].append(r)
                    print(f"  run {i + 1} {name:9}  compile {r['compile_s']:.3f} s  wall {r['wall_s']:.2f} s  {r['states']}")
            med = {n: statistics.median(r["compile_s"] for r in rs) for n, rs in rows.items()}
            wall = {n: statistics.median(r["wall_s"] for r in rs) for n, rs in rows.items()}
            ratio = med["tcinspect"] / med["plain"] if med["plain"] else float("nan")
            verdict = "within" if 0.9 <= ratio <= 1.1 else "outside"
            print(f"  median warm compile: plain {med['plain']:.3f} s, tcinspect {med['tcinspect']:.3f} s, "
                  f"ratio {ratio:.2f} ({verdict} 0.90-1.10); median wall: plain {wall['plain']:.2f} s, "
                  f"tcinspect {wall['tcinspect']:.2f} s")


if __name__ == "__main__":
    main()
