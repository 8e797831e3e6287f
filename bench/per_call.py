"""`guards --per-call` against a plain process: Dynamo's cache lookup and the call, median of each, side by side.

    python bench/per_call.py MODEL.py [--runs 6] [--calls 20] [--backend inductor --backend eager]

Each run is one fresh process of each kind, taking turns: ``tcinspect guards MODEL --per-call CALLS --backend B
--fresh -f json`` and a plain script that compiles the model with ``torch.compile(backend=B)``, makes one call with
its backward (as the capture does), a few untimed calls, then CALLS calls under ``torch.profiler``, each in a
``record_function`` span, reading the same ``TorchDynamo Cache Lookup`` events. Both are the median over the
calls; the table gives each run's pair and the ratio of the medians over the runs (a shared machine moves single
runs by tens of percent). Only public tools: subprocess, json, statistics, torch.profiler.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PLAIN = r'''
import json, runpy, statistics, sys
import torch
from torch.profiler import ProfilerActivity, profile, record_function
ns = runpy.run_path(sys.argv[1])
model, x = ns["model"], ns["example_inputs"]
calls, backend = int(sys.argv[2]), sys.argv[3]
compiled = torch.compile(model, backend=backend)
out = compiled(*x)
loss = out if isinstance(out, torch.Tensor) else getattr(out, "logits", out[0])
loss.sum().backward()
for _ in range(5):
    compiled(*x)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for i in range(calls):
        with record_function(f"call {i}"):
            compiled(*x)
events = prof.events()
spans = [e for e in events if e.name.startswith("call ")]
lookups = [e for e in events if e.name == "TorchDynamo Cache Lookup"
           and any(s.time_range.start <= e.time_range.start and e.time_range.end <= s.time_range.end for s in spans)]
print(json.dumps({"lookup_us": statistics.median(e.time_range.end - e.time_range.start for e in lookups),
                  "call_us": statistics.median(s.time_range.end - s.time_range.start for s in spans)}))
'''


def tcinspect(model: str, calls: int, backend: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-m", "tcinspect", "guards", model, "--per-call", str(calls), "--backend",
                          backend, "--fresh", "-f", "json"], capture_output=True, text=True, check=True).stdout
    row = json.loads(out)["guard_cost"]["per_call"]["input_sets"][0]
    return float(row["lookup_us"]), float(row["call_us"])


def plain(model: str, calls: int, backend: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", PLAIN, model, str(calls), backend], capture_output=True, text=True,
                         check=True).stdout
    row = json.loads(out.strip().splitlines()[-1])
    return float(row["lookup_us"]), float(row["call_us"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--backend", action="append")
    a = ap.parse_args()
    model = str(Path(a.model).resolve())
    for backend in a.backend or ["inductor"]:
        ours, theirs = [], []
        for _ in range(a.runs):
            ours.append(tcinspect(model, a.calls, backend))
            theirs.append(plain(model, a.calls, backend))
        print(f"backend {backend}: {a.runs} runs of {a.calls} calls, lookup / call µs (median of the calls)")
        for i, (t, p) in enumerate(zip(ours, theirs)):
            print(f"  run {i + 1}: tcinspect {t[0]:7.1f} / {t[1]:8.1f}   plain {p[0]:7.1f} / {p[1]:8.1f}")
        for k, name in ((0, "lookup"), (1, "call")):
            mine, base = statistics.median(x[k] for x in ours), statistics.median(x[k] for x in theirs)
            print(f"  {name}: tcinspect {mine:.1f} µs, plain {base:.1f} µs, ratio {mine / base:.2f}")


if __name__ == "__main__":
    main()
