"""DDPOptimizer's graph splits, from the structured trace. Pure: no torch.

Under DistributedDataParallel, Dynamo hands each captured graph to DDPOptimizer, which splits it
where DDP's gradient buckets end, so that each bucket's all-reduce can start while backward still
runs on the earlier pieces (torch/_dynamo/backends/distributed.py). Torch 2.11-2.15 log the outer
graph as ``optimize_ddp_split_graph`` and then each child as ``optimize_ddp_split_child`` (with its
submodule name), inside the compile id of the Dynamo graph they came from; nothing is logged when
the graph fits in one bucket.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from tcinspect.parse import events as ev_mod
from tcinspect.parse.events import Event
from tcinspect.parse.fxgraph import parse_graph
from tcinspect.report import DdpBucket, DdpSplit, Graph, Node
from tcinspect.vocabulary import static_nbytes

SPLIT_GRAPH = "optimize_ddp_split_graph"
SPLIT_CHILD = "optimize_ddp_split_child"

# Dynamo names a lifted parameter after its path: L['self'].layers[0].weight becomes the placeholder
# l_self_modules_layers_modules_0_parameters_weight_ (torch/_dynamo/output_graph.py, 2.11-2.15)
_PARAM_PATH = re.compile(r"_(?:modules|parameters)_")
_ANNOTATION = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\]$")


def splits(events: Iterable[Event]) -> tuple[DdpSplit, ...]:
    """Every DDPOptimizer split in a run, in compile order, each with its children."""
    out: list[DdpSplit] = []
    for cid, group in ev_mod.by_compile_id(events).items():
        last = max((e.attempt for e in group), default=0)
        outer: Graph | None = None
        children: list[tuple[str, Graph]] = []
        for e in group:
            if e.attempt != last:
                continue
            if e.name == SPLIT_GRAPH:
                if outer is not None:
                    out.append(_split(cid, outer, children))
                outer, children = _typed(parse_graph(SPLIT_GRAPH, _outer_code(e.payload))), []
            elif e.name == SPLIT_CHILD and outer is not None:
                name = str(e.meta.get("name", f"submod_{len(children)}"))
                children.append((name, _typed(parse_graph(SPLIT_CHILD, e.payload))))
        if outer is not None:
            out.append(_split(cid, outer, children))
    return tuple(out)


def _outer_code(text: str) -> str:
    """The outer graph's own forward: print_readable also prints each child as a nested class."""
    lines = text.rstrip().splitlines()
    for i, line in enumerate(lines):
        if i and line.startswith("    class "):
            return "\n".join(lines[:i]).rstrip() + "\n"
    return "\n".join(lines) + "\n"


def _typed(graph: Graph) -> Graph:
    """Split ``f32[512, 512]`` into dtype and shape: these graphs are printed without strides, which the
    FX parser expects (``f32[512, 512][512, 1]``), so it leaves the whole annotation as the dtype."""
    nodes = []
    for n in graph.nodes:
        m = _ANNOTATION.match(n.dtype) if not n.shape else None
        if m:
            n = replace(n, dtype=m["dtype"], shape=tuple(d.strip() for d in m["shape"].split(",") if d.strip()))
        nodes.append(n)
    return replace(graph, nodes=tuple(nodes))


def _split(cid: str, outer: Graph, children: list[tuple[str, Graph]]) -> DdpSplit:
    n = len(children)
    buckets = []
    for i, (name, graph) in enumerate(children):
        params = [p for p in graph.nodes if p.op == "placeholder" and "_parameters_" in p.name]
        buckets.append(DdpBucket(name=name, bucket=n - 1 - i, parameters=tuple(parameter_name(p.name) for p in params),
                                 parameter_bytes=sum(_nbytes(p) for p in params), graph=graph))
    return DdpSplit(compile_id=cid, graph=outer, children=tuple(buckets))


def parameter_name(placeholder: str) -> str:
    """``l_self_modules_layers_modules_0_parameters_weight_`` -> ``layers.0.weight``."""
    parts = _PARAM_PATH.split(placeholder.strip("_"))
    return ".".join(parts[1:]) if len(parts) > 1 else placeholder


def _nbytes(node: Node) -> int:
    return static_nbytes(node.dtype, node.shape) or 0  # 0: a symbolic size or an unknown dtype
