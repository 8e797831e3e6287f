#!/usr/bin/env python
"""Writing and reading a large saved report, before and after: ``json`` against orjson for the JSON text,
PyYAML's C loader against tcinspect's own reader for the YAML, and the first query of a YAML report written
elsewhere (no JSON twin in the cache yet), side by side with their ratio.

The reports are ``bench/llm_report.py``'s (N Llama-shaped layers, forward and backward): 14 layers give a
12 MB YAML, 17 layers 15 MB. In process: the best of ``--runs`` (garbage collector off, as ``loads`` runs);
the first query is ``python -m tcinspect trace REPORT.yaml --stage summary`` in a subprocess with an empty
cache directory, the best of ``--runs``; "before" runs it with the reader of the emitter's YAML switched off
(every YAML to PyYAML, as before it existed). No torch.

    python bench/serialize_speed.py                  # 14 and 17 layers, 3 runs
    python bench/serialize_speed.py --layers 14 --runs 5
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_report
from tcinspect import serialize
from tcinspect.serialize import floats, json_text, yaml_read

#: the first query, with the emitter's reader switched off ("before") or on ("after")
QUERY = ("import sys\nfrom tcinspect.serialize import yaml_read\n"
         "def refuse(text):\n    raise yaml_read.NotOurs\n"
         "if sys.argv[1] == 'before':\n    yaml_read.parse = refuse\n"
         "from tcinspect.cli import main\nsys.exit(main(['trace', sys.argv[2], '--stage', 'summary']))\n")


def best(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.disable()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        gc.enable()
    return min(times)


def first_query(path: Path, which: str, runs: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the query, each the best of ``runs``; the CPU time is user + system from
    ``os.wait4``. ``which`` "twin": the twin is written first and the query reads it (as every later query
    does), a reference row: docs/performance.md has its time on an idle machine."""
    walls, cpus = [], []
    warm, mode = which == "twin", "after" if which == "twin" else which
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:  # no twin: the YAML itself is read
            env = {**os.environ, "TCINSPECT_CACHE_DIR": cache}
            if warm:  # a first query writes the twin; the one timed reads it
                subprocess.run([sys.executable, "-c", QUERY, mode, str(path)], env=env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", QUERY, mode, str(path)], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            walls.append(time.perf_counter() - start)
            cpus.append(usage.ru_utime + usage.ru_stime)
            assert os.waitstatus_to_exitcode(status) == 0
    return min(walls), min(cpus)


def measure(layers: int, runs: int) -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    rep = llm_report.build(layers)
    data = serialize.to_dict(rep)
    text = serialize.dumps(rep, "yaml")
    kind = floats.kind(rep)
    assert json_text.dumps(data, kind=kind) == json_text.stdlib_dumps(data)
    assert json_text.dumps(data, compact=True, kind=kind) == json_text.stdlib_dumps(data, compact=True)
    name = f"llm{layers} {len(text.encode()) / 1e6:.1f} MB YAML"
    rows = [
        ("JSON text, indented (`-f json`, `-o x.json`)", lambda: json_text.stdlib_dumps(data),
         lambda: json_text.dumps(data, kind=floats.kind(rep))),
        ("JSON text, compact (cache entry, twin)", lambda: json_text.stdlib_dumps(data, compact=True),
         lambda: json_text.dumps(data, compact=True, kind=floats.kind(rep))),
        ("YAML text -> plain data", lambda: yaml.load(text, Loader=loader), lambda: yaml_read.parse(text)),
    ]
    for label, before, after in rows:
        b, f = best(before, runs), best(after, runs)
        print(f"| {name} | {label} | {b:.3f} s | {f:.3f} s | {b / f:.1f}× |", flush=True)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "report.yaml"
        path.write_text(text, encoding="utf-8")
        (bw, bc), (fw, fc) = first_query(path, "before", runs), first_query(path, "after", runs)
        print(f"| {name} | first query, no twin (`trace REPORT.yaml --stage summary`), wall | {bw:.2f} s | {fw:.2f} s | "
              f"{bw / fw:.1f}× |", flush=True)
        print(f"| {name} | … its CPU time (user + system) | {bc:.2f} s | {fc:.2f} s | {bc / fc:.1f}× |", flush=True)
        tw, tc = first_query(path, "twin", runs)
        print(f"| {name} | reference: a later query (through the JSON twin), wall · CPU | {tw:.2f} s · {tc:.2f} s | | |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="14,17")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores; best of {a.runs}\n")
    print("| report | step | before | after | ratio |\n| --- | --- | ---: | ---: | ---: |")
    for layers in a.layers.split(","):
        measure(int(layers), a.runs)


if __name__ == "__main__":
    main()
