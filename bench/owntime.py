"""Time the work `tcinspect trace` does after the compile, on the report that run produced.

`tcinspect trace MODEL -o out.yaml` does four things once the report is built: it writes the report
cache entry (compact JSON), the YAML file and its JSON twin (compact JSON, so that reading the YAML
back is fast), and the tables on stdout. Those are pure functions of the
report, so this script times the very same calls on the run's report, read back from its cache entry,
and prints them as one JSON line (seconds):

    python bench/owntime.py .tcinspect/model-....json
    {"cache_json_s": 0.09, "yaml_s": 2.9, "render_s": 0.05, "fx_nodes": 10003, "graphs": 1, ...}

The capture's own parts (the structured-trace handler, ``record_s``, and events -> report,
``assemble_s``) are in the report's ``timings``, measured inside the run; they are passed through.
"""

from __future__ import annotations

import io
import json
import sys
import time

from tcinspect import cache, serialize
from tcinspect.render import ranks, table


def _report(path: str):
    """The report of a cache entry (its traced-source fingerprints and Inductor cache state set aside, as the cache
    reads it) or of a saved report."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict) and (cache.SOURCES_KEY in data or cache.INDUCTOR_KEY in data):
            data.pop(cache.SOURCES_KEY, None)
            data.pop(cache.INDUCTOR_KEY, None)
            return serialize.from_dict(data)
    return serialize.load(path)


def measure(path: str) -> dict:
    rep = _report(path)
    out: dict = dict(rep.timings)

    start = time.perf_counter()
    serialize.dumps(rep, "json", compact=True)  # cache.store
    out["cache_json_s"] = time.perf_counter() - start

    start = time.perf_counter()
    serialize.dumps(rep, "yaml")  # -o out.yaml
    out["yaml_s"] = time.perf_counter() - start

    start = time.perf_counter()
    serialize.dumps(rep, "json", compact=True)  # the YAML's JSON twin (cache.remember_twin)
    out["twin_json_s"] = time.perf_counter() - start

    # the CLI's console (render/table.py), at 120 columns, to a file: no colour
    console = table.console(120)
    console.file = io.StringIO()
    start = time.perf_counter()
    console.print(ranks.trace(rep, None, False, table.ROW_LIMIT))
    out["render_s"] = time.perf_counter() - start
    out["render_lines"] = console.file.getvalue().count("\n")

    out["graphs"] = len(rep.stages.dynamo.graphs)
    out["fx_nodes"] = sum(len(g.graph.nodes) for g in rep.stages.dynamo.graphs)
    out["aot_nodes"] = sum(len(x.nodes) for g in rep.stages.aot_autograd.graphs
                           for x in (g.forward, g.backward, g.inference) if x is not None)
    return out


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1])))
