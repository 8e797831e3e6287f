#!/usr/bin/env python
"""The ways a saved report could be read back, timed side by side on one report (in process, medians).

Decoders of the YAML and of its JSON twin (PyYAML's C loader, json, and orjson / msgspec when they are
importable: neither is a tcinspect dependency), each with the garbage collector on and off; then the
dataclass build: ``serialize.build.build`` (per value, through typing) against the generated builders.

    python bench/load_options.py report.yaml [--runs 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import yaml

from tcinspect import serialize
from tcinspect.report import Report
from tcinspect.serialize.build import build
from tcinspect.serialize.builders import builder


def timed(fn: Callable[[], Any], runs: int, collect: bool = True) -> float:
    out = []
    for _ in range(runs):
        gc.collect()
        if not collect:
            gc.disable()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
        gc.enable()
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with open(a.report, encoding="utf-8") as fh:
        text = fh.read()
    data = yaml.load(text, Loader=yaml.CSafeLoader)
    twin = serialize.dumps(serialize.from_dict(data), "json", compact=True)
    rows: list[tuple[str, float, float]] = []
    decoders: dict[str, Callable[[], Any]] = {
        "YAML, PyYAML CSafeLoader": lambda: yaml.load(text, Loader=yaml.CSafeLoader),
        "JSON twin, json (stdlib)": lambda: json.loads(twin),
    }
    try:
        import orjson

        decoders["JSON twin, orjson"] = lambda: orjson.loads(twin)
    except ImportError:
        pass
    try:
        import msgspec

        decoders["JSON twin, msgspec"] = lambda: msgspec.json.decode(twin)
    except ImportError:
        pass
    for name, fn in decoders.items():
        runs = 1 if "YAML" in name else a.runs
        rows.append((name, timed(fn, runs), timed(fn, runs, collect=False)))
    known = {f.name for f in dataclasses.fields(Report)}
    fields = {k: v for k, v in data.items() if k in known and k != "timings"}
    rows.append(("build: serialize.build.build (per value)", timed(lambda: build(Report, fields, "report"), a.runs),
                 timed(lambda: build(Report, fields, "report"), a.runs, collect=False)))
    rows.append(("build: generated builders", timed(lambda: builder(Report)(fields), a.runs),
                 timed(lambda: builder(Report)(fields), a.runs, collect=False)))
    print(f"{a.report}: {len(text.encode()) / 1e6:.1f} MB YAML, {len(twin.encode()) / 1e6:.1f} MB JSON twin; "
          f"median of {a.runs} (YAML: 1)\n")
    print("| step | GC on | GC off |\n|---|---|---|")
    for name, on, off in rows:
        print(f"| {name} | {on:.3f} s | {off:.3f} s |")


if __name__ == "__main__":
    main()
