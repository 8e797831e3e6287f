"""What Inductor's provenance tracking costs: torch.compile time with it off and on, cold and warm.

    python bench/provenance_cost.py [--runs N] [MODEL.py ...]

Each measurement is a fresh Python process that compiles the model file's ``model`` on its
``example_inputs`` (forward + backward when the output requires grad) and prints the time of the first
call. "cold" uses an empty Inductor cache directory; "warm" reuses the directory the cold run filled.
Off and on alternate run by run, so a drifting machine affects both alike; the table gives medians and
the on/off ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r"""
import runpy, sys, time, torch
import torch._inductor.config as ic
ic.trace.provenance_tracking_level = int(sys.argv[2])
ns = runpy.run_path(sys.argv[1])
inputs = ns["example_inputs"]() if callable(ns["example_inputs"]) else ns["example_inputs"]
start = time.perf_counter()
out = torch.compile(ns["model"])(*inputs)
if isinstance(out, torch.Tensor) and out.requires_grad:
    out.sum().backward()
print(f"{time.perf_counter() - start:.3f}")
"""


def one(model: Path, level: int, cache: str) -> float:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, str(model), str(level)], env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("models", nargs="*", default=[str(ROOT / "sample_models" / "tiny.py"),
                                                  str(ROOT / "sample_models" / "transformer_block.py")])
    args = ap.parse_args()
    print("| model | cold off (s) | cold on (s) | cold on/off | warm off (s) | warm on (s) | warm on/off |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in args.models:
        times: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.runs):
            for level in (0, 1):
                with tempfile.TemporaryDirectory(prefix="prov-bench-") as cache:
                    times.setdefault(("cold", level), []).append(one(Path(m), level, cache))
                    times.setdefault(("warm", level), []).append(one(Path(m), level, cache))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"| {Path(m).name} | {med['cold', 0]:.2f} | {med['cold', 1]:.2f} | {med['cold', 1] / med['cold', 0]:.2f} "
              f"| {med['warm', 0]:.2f} | {med['warm', 1]:.2f} | {med['warm', 1] / med['warm', 0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
