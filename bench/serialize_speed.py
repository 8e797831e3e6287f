#!/usr/bin/env python
"""Writing and reading a large saved report, before and after: ``json`` against orjson for the JSON text,
PyYAML's C loader against tcinspect's own reader for the YAML, and the first query of a YAML report written
elsewhere (no JSON twin in the cache yet), side by side with their ratio.

The reports are ``bench/llm_report.py``'s (N Llama-shaped layers, forward and backward): 14 layers give a
12 MB YAML, 17 layers 15 MB. In process: the best of ``--runs`` (garbage collector off, as ``loads`` runs);
the first query is ``python -m tcinspect trace REPORT.yaml --stage summary`` in a subprocess with an empty
cache directory and Python's compiled modules kept (as an installed package has them), the median of
``--runs``, each mode in turn with the JSON-twin reference query: "before" with every YAML read by PyYAML,
"recursive" with the emitter's YAML read by its recursive reader alone (the line scan off). No torch.

    python bench/serialize_speed.py                  # 14 and 17 layers, 3 runs
    python bench/serialize_speed.py --layers 14 --runs 5
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import platform
import statistics
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

#: the first query: "before" with every YAML read by PyYAML, "recursive" with the emitter's YAML read by the
#: recursive reader alone (the line scan off), "after" as tcinspect reads it now
QUERY = ("import sys\nfrom tcinspect.serialize import yaml_read\n"
         "def refuse(*args):\n    raise yaml_read.NotOurs\n"
         "if sys.argv[1] == 'before':\n    yaml_read.parse = refuse\n"
         "if sys.argv[1] == 'recursive':\n    yaml_read._scan = refuse\n"
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


def _env(cache: str, pycache: str) -> dict[str, str]:
    # as a user runs it: Python's compiled modules kept (an installed package has them), in a folder of their own
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "TCINSPECT_CACHE_DIR": cache, "PYTHONPYCACHEPREFIX": pycache}


def _run(path: Path, mode: str, env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", QUERY, mode, str(path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def first_queries(path: Path, modes: list[str], runs: int, pycache: str) -> dict[str, tuple[list[float], list[float]]]:
    """mode -> (wall seconds, CPU seconds) of each run, the modes taking turns, so a busy moment falls on all of
    them alike. A fresh cache directory each time, so the YAML itself is read; mode "twin": the twin is written
    first and the query reads it (as every later query does), the reference."""
    got: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in modes}
    for _ in range(runs):
        for mode in modes:
            with tempfile.TemporaryDirectory() as cache:
                env = _env(cache, pycache)
                if mode == "twin":
                    _run(path, "after", env)
                wall, cpu = _run(path, "after" if mode == "twin" else mode, env)
            got[mode][0].append(wall)
            got[mode][1].append(cpu)
    return got


_NAMES: dict[type, Any] = {}


def _walked(value: Any) -> Any:
    """Plain data as ``mapping.plain`` made it before its per-class functions: a call per value, each class's
    field names looked up once."""
    cls = value.__class__
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = (tuple(f.name for f in dataclasses.fields(value)) if dataclasses.is_dataclass(value)
                               else "tuple" if isinstance(value, tuple) else "scalar")
    if names == "scalar":
        return value
    if names == "tuple":
        return [_walked(v) for v in value]
    return {n: _walked(getattr(value, n)) for n in names}


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
        ("YAML text -> plain data: the recursive reader → the line scan (and the recursive reader's fallback)",
         lambda: yaml_read._mapping(text.split("\n")[:-1], 0, 0), lambda: yaml_read.parse(text)),
        ("report -> plain data (the twin, every `-o`): a call per value → generated per class",
         lambda: _walked(rep), lambda: serialize.to_dict(rep)),
    ]
    for label, before, after in rows:
        b, f = best(before, runs), best(after, runs)
        print(f"| {name} | {label} | {b:.3f} s | {f:.3f} s | {b / f:.1f}× |", flush=True)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "report.yaml"
        path.write_text(text, encoding="utf-8")
        pycache = str(Path(d) / "pycache")
        _run(path, "after", _env(str(Path(d) / "warm"), pycache))  # compiles the modules once
        load = os.getloadavg()[0]
        q = first_queries(path, ["before", "recursive", "after", "twin"], runs, pycache)
        load = max(load, os.getloadavg()[0])
        med = {m: (statistics.median(w), statistics.median(c)) for m, (w, c) in q.items()}
        low = {m: (min(w), min(c)) for m, (w, c) in q.items()}
        for label, before in (("PyYAML", "before"), ("the recursive reader", "recursive")):
            bw, bc = med[before]
            fw, fc = med["after"]
            print(f"| {name} | first query, no twin, wall (median), {label} → now | {bw:.2f} s | {fw:.2f} s | "
                  f"{bw / fw:.1f}× |", flush=True)
            print(f"| {name} | … its CPU time (user + system, median) | {bc:.2f} s | {fc:.2f} s | {bc / fc:.1f}× |",
                  flush=True)
        tw, tc = med["twin"]
        print(f"| {name} | reference: a later query (through the JSON twin), wall · CPU (median) | {tw:.2f} s · "
              f"{tc:.2f} s | | |", flush=True)
        print(f"| {name} | first query / reference, same run: wall · CPU (median; best of {runs}) | "
              f"{med['after'][0] / tw:.2f} · {med['after'][1] / tc:.2f} ({low['after'][0] / low['twin'][0]:.2f} · "
              f"{low['after'][1] / low['twin'][1]:.2f}) | | |", flush=True)
        print(f"| {name} | load average (1 min) during the queries, at most | {load:.2f} | | |", flush=True)


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
