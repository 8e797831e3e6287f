"""Write an LLM-shaped saved report of N decoder layers (tests/builders/llm_report.py builds it).

    python bench/llm_report.py 16 /tmp/llm16.yaml      # YAML (any path not ending in .json)
    python bench/llm_report.py 64 /tmp/llm64.json
"""

from __future__ import annotations

import sys
from pathlib import Path

from tcinspect import serialize
from tcinspect.report import Report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from builders.llm_report import build


def write(layers: int, path: str) -> Report:
    rep = build(layers)
    serialize.write_atomic(path, serialize.dumps(rep, serialize.format_for_path(path)))
    return rep


if __name__ == "__main__":
    rep = write(int(sys.argv[1]), sys.argv[2])
    outs = rep.stages.inductor.outputs
    print(f"{sum(len(o.kernels) for o in outs)} kernels, "
          f"{sum(len(o.post_grad_graph.nodes) for o in outs if o.post_grad_graph)} post-grad nodes, "
          f"{len(rep.stages.dynamo.graphs[0].graph.nodes)} Dynamo nodes, {len(rep.stages.dynamo.graphs[0].guards)} guards")
