"""What a graph picture shows (pure; no torch): every Dynamo graph and Inductor post-grad graph of a report,
each node's kernel and colour, and the graph breaks that ended a graph. tcinspect.render.dot and
tcinspect.render.layered draw these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

from tcinspect.errors import UsageError
from tcinspect.report import DynamoGraph, Graph, GraphBreak, Kernel, Node, OutputCode, Report, break_identity

#: Light fills (ColorBrewer Set3 and Pastel1, then a few more) so black labels read on each;
#: grey is kept for extern kernels.
PALETTE = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#fbb4ae", "#b3cde3", "#decbe4", "#fed9a6",
    "#e5d8bd", "#c7e9c0", "#f4cae4", "#9ecae1",
)
EXTERN_FILL = "#d4d4d4"
INPUT_FILL = "#eef1f5"
BREAK_FILL = "#d62728"

#: How each kind of node is drawn: (shape, style, peripheries). Tests and the HTML legend use it.
SHAPES = {
    "kernel": ("box", "filled", 1),
    "extern": ("box", "filled", 2),
    "placeholder": ("invhouse", "filled", 1),
    "get_attr": ("cylinder", "filled", 1),
    "output": ("house", "filled", 1),
    "none": ("box", "dashed", 1),  # an op no kernel was traced to
    "op": ("box", "solid", 1),  # an op of a graph without kernel information (no Inductor)
    "break": ("octagon", "filled,bold", 1),
}


@dataclass(frozen=True)
class KernelRef:
    """The kernel a node became: its name, launch position in its output, and fill colour."""

    name: str
    index: int
    colour: str
    extern: bool


@dataclass(frozen=True)
class Picture:
    """One graph to draw, with the kernel each of its nodes became and the breaks that ended it."""

    key: str  # a Dynamo graph's compile id ("1/0") or an Inductor output's AOT id ("0_forward")
    title: str
    graph: Graph
    kernels: Mapping[str, KernelRef] = field(default_factory=dict)
    breaks: tuple[GraphBreak, ...] = ()
    #: The frame (compile id before the "/"), so a break can point at the graph that resumed it.
    frame: str = ""
    stage: str = "dynamo"  # dynamo | post_grad


# ----------------------------------------------------------------------------- kernels per node


def kernel_refs(out: OutputCode) -> list[KernelRef]:
    """One reference per kernel launch: generated kernels cycle through the palette, externs are grey."""
    refs, generated = [], 0
    for i, k in enumerate(out.kernels):
        if k.kind == "extern":
            refs.append(KernelRef(k.name, i, EXTERN_FILL, True))
        else:
            refs.append(KernelRef(k.name, i, PALETTE[generated % len(PALETTE)], False))
            generated += 1
    return refs


def op_name(target: str) -> str:
    """``aten.addmm.default`` -> ``addmm``; ``torch._C._nn.linear`` -> ``linear``."""
    parts = target.split(".")
    if len(parts) >= 3 and parts[0] in ("aten", "prims", "quantized"):
        return parts[1]
    return parts[-1]


def post_grad_kernels(out: OutputCode) -> dict[str, KernelRef]:
    """Which kernel each post-grad node was fused into.

    Generated kernels claim the nodes Inductor lists as their origins. An extern kernel's origins
    also name the nodes whose results it consumes, so it claims only the nodes of its own op
    (``mm`` claims ``aten.mm``), falling back to its origins when no node has that op.
    """
    graph = out.post_grad_graph
    if graph is None:
        return {}
    nodes = {n.name: n for n in graph.nodes}
    refs = kernel_refs(out)
    owner: dict[str, KernelRef] = {}
    for k, ref in zip(out.kernels, refs):
        if k.kind != "extern":
            for name in k.source_nodes:
                if name in nodes and name not in owner:
                    owner[name] = ref
    by_op: dict[str, list[str]] = {}  # each op's call_function nodes, in graph order
    for n in graph.nodes:
        if n.op == "call_function":
            by_op.setdefault(op_name(n.target), []).append(n.name)
    for k, ref in zip(out.kernels, refs):
        if k.kind != "extern":
            continue
        same_op = [name for name in by_op.get(k.name, ()) if name not in owner]
        if same_op:
            listed = [name for name in same_op if name in k.source_nodes]
            for name in listed or same_op[:1]:  # launches are in order: pair the first free node
                owner[name] = ref
        else:
            for name in k.source_nodes:
                if name in nodes and name not in owner:
                    owner[name] = ref
    return owner


def _line_key(file: str, line: int) -> str:
    return f"{file}:{line}"


def dynamo_kernels(rep: Report, dg: DynamoGraph) -> dict[str, KernelRef]:
    """Which forward (or inference) kernel each Dynamo node most likely became.

    Dynamo nodes are not Inductor's nodes: a node is matched by name to a kernel's origins, else by
    its source line to the kernel made from that line (the one whose ops name the node's op, when
    several were).
    """
    outs = [o for o in rep.stages.inductor.outputs if o.compile_id == dg.compile_id and o.part != "backward"]
    if not outs:
        return {}
    out = outs[0]
    refs = kernel_refs(out)
    by_name: dict[str, KernelRef] = {}
    by_line: dict[str, list[tuple[Kernel, KernelRef]]] = {}
    for k, ref in zip(out.kernels, refs):
        for name in k.source_nodes:
            # a generated kernel wins over an extern one that only consumes the node
            if name not in by_name or (by_name[name].extern and not ref.extern):
                by_name[name] = ref
        for line in k.user_lines:
            by_line.setdefault(line, []).append((k, ref))
    owner: dict[str, KernelRef] = {}
    for n in dg.graph.nodes:
        if n.op not in ("call_function", "call_method", "call_module"):
            continue
        if n.name in by_name:
            owner[n.name] = by_name[n.name]
        elif n.source is not None:
            candidates = by_line.get(_line_key(n.source.file, n.source.line), [])
            op = op_name(n.target)
            named = [ref for k, ref in candidates if any(op_name(a) == op or a == op for a in k.aten_ops)]
            if named or candidates:
                owner[n.name] = (named or [ref for _, ref in candidates])[0]
    return owner


def pictures(rep: Report) -> list[Picture]:
    """Every Dynamo graph (with the breaks that ended it), then every Inductor post-grad graph."""
    out: list[Picture] = []
    breaks: dict[str, list[GraphBreak]] = {}
    seen: set[tuple[str, tuple[str, str, int, str]]] = set()
    for b in rep.stages.dynamo.graph_breaks:
        key = (b.compile_id, break_identity(b))
        if key not in seen:  # Dynamo may log one break twice (it restarts the analysis)
            seen.add(key)
            breaks.setdefault(b.compile_id, []).append(b)
    for dg in rep.stages.dynamo.graphs:
        loc = f"{dg.file.rsplit('/', 1)[-1]}:{dg.line}" if dg.file else ""
        title = f"dynamo_output_graph {dg.compile_id} · {dg.function}" + (f" ({loc})" if loc else "")
        out.append(Picture(dg.compile_id, title, dg.graph, dynamo_kernels(rep, dg),
                           tuple(breaks.get(dg.compile_id, ())), dg.compile_id.split("/")[0]))
    for o in rep.stages.inductor.outputs:
        if o.post_grad_graph is not None:
            out.append(Picture(o.aot_id or f"{o.compile_id} {o.part}",
                               f"{o.post_grad_graph.name} {o.compile_id} {o.part}", o.post_grad_graph,
                               post_grad_kernels(o), frame=o.compile_id.split("/")[0], stage="post_grad"))
    return out


def select(pics: Iterable[Picture], keys: Sequence[str]) -> list[Picture]:
    """The pictures whose key (a compile id such as ``1/0``, or an AOT id such as ``0_forward``) is given."""
    pics = list(pics)
    chosen = [p for p in pics if p.key in keys]
    unknown = [k for k in keys if k not in {p.key for p in pics}]
    if unknown:
        names = ", ".join(p.key for p in pics) or "none"
        raise UsageError(f"no graph '{unknown[0]}' in this report", f"choose from: {names}")
    return chosen


# ----------------------------------------------------------------------------- nodes


#: Characters a label drops (control characters; a newline or tab is kept where it means one).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: A Python name: the node names an FX node's arguments mention.
NODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tensor_label(n: Node) -> str:
    """``f32[8, 16]``; ``sym`` for a symbolic size; "" when the graph did not say."""
    if not n.dtype:
        return ""
    return "sym" if n.dtype == "sym" else f"{n.dtype}[{', '.join(n.shape)}]"


def node_kind(n: Node, ref: Optional[KernelRef], has_kernels: bool = True) -> str:
    """The drawing kind of a node: a key of ``SHAPES``."""
    if n.op in ("placeholder", "get_attr", "output"):
        return n.op
    if ref is None:
        return "none" if has_kernels else "op"
    return "extern" if ref.extern else "kernel"
