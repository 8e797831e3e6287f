"""Report -> Graphviz DOT -> SVG: FX graphs drawn as DAGs, nodes coloured by the kernel they became.

Pure functions of the report, except ``run_dot``: the one place that runs Graphviz's ``dot``.
Never imports torch.
"""

from __future__ import annotations

import html
import itertools
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

from tcinspect.errors import UsageError
from tcinspect.report import DynamoGraph, Graph, GraphBreak, Kernel, Node, OutputCode, Report, break_identity

#: Nodes drawn per graph: dot's layout time grows faster than the node count (on 2 CPU cores a
#: 2,000-node graph took 1.5 s and a 4,000-node one 7 s), so larger graphs are cut and say so.
MAX_GRAPH_NODES = 1500
#: Nodes drawn in one picture across all its graphs: dot lays clusters out much more slowly than
#: one graph (a picture of 4,000 nodes in 20 clusters took 24 s, of 2,000 nodes 4 s).
MAX_PICTURE_NODES = 2000
#: Graphs up to this size get a tooltip per node naming its kernel.
TOOLTIP_NODES = 300
#: A layout that takes longer than this is abandoned (the page then says so).
DOT_TIMEOUT_S = 60.0
#: ``svg``/``html`` give dot this long, then draw the graphs with ``layered`` instead: never an error.
DOT_FALLBACK_S = 3.0

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


#: GraphvizError's cause when ``dot`` is not installed (the renderers then use ``layered``)
DOT_MISSING = "is not on PATH"


class GraphvizError(UsageError):
    """Graphviz's ``dot`` is missing or could not lay a graph out."""


class GraphvizTimeout(GraphvizError):
    """``dot`` did not finish in time: the caller lays the graph out itself (``layered``)."""


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


@dataclass(frozen=True)
class Dot:
    """DOT text and what had to be left out of the drawing."""

    text: str
    drawn: int
    notes: tuple[str, ...] = ()


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


def _op_name(target: str) -> str:
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
    for k, ref in zip(out.kernels, refs):
        if k.kind != "extern":
            continue
        same_op = [n.name for n in graph.nodes if n.name not in owner and n.op == "call_function"
                   and _op_name(n.target) == k.name]
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
            op = _op_name(n.target)
            named = [ref for k, ref in candidates if any(_op_name(a) == op or a == op for a in k.aten_ops)]
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
                               f"inductor_post_grad_graph {o.compile_id} {o.part}", o.post_grad_graph,
                               post_grad_kernels(o), frame=o.compile_id.split("/")[0], stage="post_grad"))
    return out


# ----------------------------------------------------------------------------- DOT text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def label_text(text: str, width: int = 48) -> str:
    """Text for a DOT HTML-like label: clipped, HTML-escaped, backslashes doubled.

    dot reads ``\\N``, ``\\G`` and ``\\\\`` in labels as escapes even inside HTML-like labels, so
    every backslash is doubled to print as itself.
    """
    text = _CONTROL.sub("", text)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return html.escape(text, quote=True).replace("\\", "\\\\")


def _quoted(text: str) -> str:
    """A DOT quoted string (ids, colours, tooltips)."""
    return '"' + _CONTROL.sub("", text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lines(*lines: str, small: Sequence[str] = ()) -> str:
    # the first line is the node's name: Dynamo's parameter names run to 40 characters and more
    parts = [f"<B>{label_text(lines[0], 32)}</B>"] + [label_text(x) for x in lines[1:] if x]
    parts += [f'<FONT POINT-SIZE="8">{label_text(x)}</FONT>' for x in small if x]
    return "<" + "<BR/>".join(parts) + ">"


def _title(pic: Picture) -> str:
    return (f"<<B>{label_text(pic.title, 90)}</B><BR/>"
            f'<FONT POINT-SIZE="8">{len(pic.graph.nodes):,} nodes · --graph {label_text(pic.key)}</FONT>>')


def _tensor(n: Node) -> str:
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


def _attrs(kind: str, fill: str, label: str, tooltip: str = "") -> str:
    shape, style, peripheries = SHAPES[kind]
    attrs = [f"shape={shape}", f'style="{style}"', f"label={label}"]
    if "filled" in style:
        attrs.append(f'fillcolor="{fill}"')
    if peripheries != 1:
        attrs.append(f"peripheries={peripheries}")
    if tooltip:
        attrs.append(f"tooltip={_quoted(tooltip)}")
    if kind == "break":
        attrs += ['fontcolor="white"', f'color="{BREAK_FILL}"']
    return ", ".join(attrs)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _inputs(n: Node, known: Mapping[str, str]) -> list[str]:
    """The ids of the nodes whose names appear in ``n``'s arguments (its FX inputs)."""
    return list(dict.fromkeys(known[t] for t in _NAME.findall(n.args) if t in known))


def _graph_body(pic: Picture, prefix: str, limit: int, why: str, legend: bool) -> tuple[list[str], int, str, str, str]:
    """DOT lines of one picture's nodes and edges: (lines, drawn, first id, last id, note).

    At most ``limit`` nodes are drawn; ``why`` names the limit when the graph is cut.
    """
    lines: list[str] = []
    known: dict[str, str] = {}
    nodes = pic.graph.nodes
    shown = nodes[:limit]
    for i, n in enumerate(shown):
        nid = f"{prefix}n{i}"
        ref = pic.kernels.get(n.name)
        kind = node_kind(n, ref, bool(pic.kernels))
        fill = {"placeholder": INPUT_FILL, "get_attr": INPUT_FILL, "output": INPUT_FILL}.get(
            kind, ref.colour if ref else "white")
        target = "" if n.op in ("placeholder", "output") else _op_name(n.target) if n.target else ""
        if kind == "extern":
            target = f"extern {ref.name if ref else ''}".strip()
        label = _lines(n.name, target, small=[_tensor(n)])
        # a tooltip wraps each node in a link element: only on graphs small enough to afford it
        tooltip = f"{ref.name} (kernel {ref.index})" if ref and len(nodes) <= TOOLTIP_NODES else ""
        lines.append(f"{nid} [{_attrs(kind, fill, label, tooltip)}];")
        for src in _inputs(n, known):
            lines.append(f"{src} -> {nid};")
        known[n.name] = nid
    note = ""
    last = f"{prefix}n{len(shown) - 1}" if shown else ""
    if len(nodes) > len(shown):
        note = f"{pic.title}: drew the first {len(shown):,} of {len(nodes):,} nodes ({why})"
        more = _lines(f"… {len(nodes) - len(shown):,} more nodes not drawn", small=[why])
        lines.append(f'{prefix}more [shape=note, style="filled", fillcolor="#fff7d6", label={more}];')
        if last:
            lines.append(f"{last} -> {prefix}more [style=dashed];")
        last = f"{prefix}more"
    if legend:
        lines += _legend(pic, prefix)
    first = f"{prefix}n0" if shown else ""
    return lines, len(shown), first, last, note


def _legend(pic: Picture, prefix: str) -> list[str]:
    """A key of the picture's kernels and colours, as a table node (standalone SVG only)."""
    refs = sorted({r.index: r for r in pic.kernels.values()}.values(), key=lambda r: r.index)
    if not refs:
        return []
    rows = "".join(
        f'<TR><TD BGCOLOR="{r.colour}" WIDTH="14"> </TD><TD ALIGN="LEFT">'
        f"{label_text(('extern ' if r.extern else '') + r.name, 60)}</TD></TR>" for r in refs)
    return [f'{prefix}legend [shape=plaintext, label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" '
            f'CELLPADDING="3"><TR><TD COLSPAN="2"><B>kernels</B></TD></TR>{rows}</TABLE>>];']


def _break_label(b: GraphBreak) -> str:
    where = f"{b.user_frame.short()} in {b.user_frame.function}" if b.user_frame else ""
    kind = b.break_type + (f" ({b.gb_id})" if b.gb_id else "")
    return _lines("graph break", kind, where, small=[b.user_frame.code.strip() if b.user_frame else ""])


def dot_source(pics: Sequence[Picture], *, legend: bool = True, budget: int = MAX_PICTURE_NODES,
               per_graph: int = MAX_GRAPH_NODES) -> Dot:
    """One DOT digraph with a cluster per picture; graph breaks link a graph to the one that resumed it."""
    body: list[str] = []
    notes: list[str] = []
    drawn = 0
    ends: list[tuple[Picture, str, str]] = []  # (picture, first node id, break node id or "")
    for p, pic in enumerate(pics):
        prefix = f"g{p}_"
        body.append(f"subgraph cluster_{p} {{")
        body.append(f'label={_title(pic)}; labeljust="l"; style="rounded"; color="#9aa4b1";')
        room = max(0, min(per_graph, budget - drawn))
        if not room and pic.graph.nodes:
            notes.append(f"{pic.title}: not drawn ({len(pic.graph.nodes):,} nodes; at most {budget:,} nodes are "
                         "drawn per picture)")
            skipped = _lines("not drawn", small=[f"{len(pic.graph.nodes):,} nodes; at most {budget:,} per picture"])
            body.append(f'{prefix}skipped [shape=note, style="filled", fillcolor="#fff7d6", label={skipped}];')
            first = last = f"{prefix}skipped"
        else:
            why = (f"at most {per_graph:,} nodes are drawn per graph" if room == per_graph else
                   f"at most {budget:,} nodes are drawn per picture")
            lines, count, first, last, note = _graph_body(pic, prefix, room, why, legend)
            body += lines
            drawn += count
            if note:
                notes.append(note)
        brk = ""
        for j, b in enumerate(pic.breaks):
            brk = f"{prefix}break{j}"
            body.append(f"{brk} [{_attrs('break', BREAK_FILL, _break_label(b))}];")
            if last:
                body.append(f'{last} -> {brk} [color="{BREAK_FILL}", style=dashed];')
        body.append("}")
        ends.append((pic, first, brk))
    # a break ends a frame's graph; Dynamo resumes in a new frame, whose graph is the next one drawn
    for p, ((pic, _, brk), (nxt, first, _)) in enumerate(itertools.pairwise(ends)):
        if brk and first and nxt.stage == "dynamo" and nxt.frame != pic.frame:
            body.append(f'{brk} -> {first} [color="{BREAK_FILL}", style=dashed, label="next graph", '
                        f'fontcolor="{BREAK_FILL}", lhead="cluster_{p + 1}"];')
    head = ('digraph tcinspect {\ncompound=true; rankdir=TB; nodesep=0.25; ranksep=0.3; newrank=true;\n'
            'graph [fontname="Helvetica", fontsize=11];\n'
            'node [fontname="Helvetica", fontsize=10, margin="0.08,0.03", height=0.3, penwidth=0.8];\n'
            'edge [arrowsize=0.6, color="#5b6573", penwidth=0.8, fontname="Helvetica", fontsize=9];\n')
    return Dot(head + "\n".join(body) + "\n}\n", drawn, tuple(notes))


# ----------------------------------------------------------------------------- running dot


def run_dot(dot: str, timeout: float = DOT_TIMEOUT_S) -> str:
    """Lay DOT text out with Graphviz's ``dot -Tsvg`` (the renderers' one subprocess)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizError(f"drawing graphs needs Graphviz's `dot`, which {DOT_MISSING}",
                            "install Graphviz (apt-get install graphviz, or brew install graphviz)")
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot.encode("utf-8"), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GraphvizTimeout(f"Graphviz's `dot` took longer than {timeout:.0f} s to lay the graph out",
                            "draw fewer graphs at once with --graph") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraphvizError(f"Graphviz's `dot` failed: {err[-1] if err else f'exit {proc.returncode}'}",
                            "report it with the saved report attached")
    return proc.stdout.decode("utf-8")


def select(pics: Iterable[Picture], keys: Sequence[str]) -> list[Picture]:
    """The pictures whose key (a compile id such as ``1/0``, or an AOT id such as ``0_forward``) is given."""
    pics = list(pics)
    chosen = [p for p in pics if p.key in keys]
    unknown = [k for k in keys if k not in {p.key for p in pics}]
    if unknown:
        names = ", ".join(p.key for p in pics) or "none"
        raise UsageError(f"no graph '{unknown[0]}' in this report", f"choose from: {names}")
    return chosen


def svg(rep: Report, graphs: Sequence[str] = ()) -> str:
    """The standalone SVG of ``--format svg``: every graph (or those picked) in one picture."""
    pics = pictures(rep)
    if graphs:
        pics = select(pics, graphs)
    if not pics:
        raise UsageError("this report has no graph to draw", "trace a model that compiles at least one graph")
    if all(len(p.graph.nodes) <= DOT_NODES for p in pics) and sum(len(p.graph.nodes) for p in pics) <= MAX_PICTURE_NODES:
        try:
            return run_dot(dot_source(pics).text, timeout=DOT_FALLBACK_S)
        except GraphvizTimeout:
            pass  # drawn below, in bounded time
        except GraphvizError as exc:
            if DOT_MISSING not in exc.cause:
                raise
            # no Graphviz (the README's set-up installs none): tcinspect's own layout, as for large graphs
    return stacked(pics)


_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)
_COMMENT = re.compile(r"<!--.*?-->\n?", re.S)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_FONT = ' font-family="Helvetica,sans-Serif"'


def inline(svg_text: str) -> str:
    """An SVG document as an element to embed in HTML.

    Drops the XML prolog, DOCTYPE, comments and namespaces (HTML needs none of them), and dot's
    font on every text element, which the page's stylesheet sets once (a third of a large graph's bytes).
    """
    text = _COMMENT.sub("", _PROLOG.sub("", svg_text, count=1)).replace(_FONT, "")
    head, sep, rest = text.partition(">")
    return _XMLNS.sub("", head) + sep + rest


# ----------------------------------------------------------------------------- tcinspect's own layout

#: Graphs with more nodes than this are laid out by ``layered`` rather than Graphviz: dot's time is
#: not a function of the size alone (on 2 CPU cores a 289-node GPT-2 forward graph took 3.9 s and a
#: 333-node backward 0.3 s; a 1,500-node one over 20 s), while this layout is linear in nodes and edges.
DOT_NODES = 200
#: Nodes ``layered`` draws per graph; past it the picture ends with a marker naming what was left out.
LAYERED_MAX_NODES = 6000
#: Nodes side by side in one row of ``layered``: wider ranks (a model's 150 parameters) wrap.
ROW_NODES = 12
_W, _H, _GAP_X, _GAP_Y = 176, 34, 14, 22
_FONT_CSS = "font-family:Helvetica,Arial,sans-serif"


def _clip_text(text: str, width: int) -> str:
    text = _CONTROL.sub("", text)
    return html.escape(text if len(text) <= width else text[: width - 1] + "…", quote=True)


def layered(pic: Picture, limit: int = LAYERED_MAX_NODES, why: str = "") -> tuple[str, int, str]:
    """One graph as an SVG laid out here, in time linear in its nodes and edges: (svg, drawn, note).

    Each node sits one row below its lowest input (FX order is topological), in the order of its
    inputs' mean position; edges are curves from input to user. Colours and kinds are those of the
    Graphviz drawing. At most ``limit`` nodes are drawn; a marker names what was left out.
    """
    nodes = pic.graph.nodes[:limit]
    index: dict[str, int] = {}
    inputs: list[list[int]] = []
    rank: list[int] = []
    for i, n in enumerate(nodes):
        ins = list(dict.fromkeys(index[t] for t in _NAME.findall(n.args) if t in index))
        inputs.append(ins)
        rank.append(1 + max(rank[j] for j in ins) if ins else 0)
        index[n.name] = i
    by_rank: dict[int, list[int]] = {}
    for i, r in enumerate(rank):
        by_rank.setdefault(r, []).append(i)
    x = [0.0] * len(nodes)
    y = [0.0] * len(nodes)
    rows: list[list[int]] = []
    for r in sorted(by_rank):
        members = by_rank[r]
        if r:  # barycentre of the inputs' positions keeps edges short
            members.sort(key=lambda i: sum(x[j] for j in inputs[i]) / len(inputs[i]))
        for start in range(0, len(members), ROW_NODES):
            rows.append(members[start:start + ROW_NODES])
            for slot, i in enumerate(rows[-1]):
                x[i] = slot
    width = max((len(r) for r in rows), default=1)
    top = 44
    for row_no, row in enumerate(rows):
        offset = (width - len(row)) / 2
        for i in row:
            x[i] = (offset + x[i]) * (_W + _GAP_X) + 10
            y[i] = top + row_no * (_H + _GAP_Y)
    height = top + len(rows) * (_H + _GAP_Y)
    has_kernels = bool(pic.kernels)
    parts: list[str] = []
    edges: list[str] = []
    for i, n in enumerate(nodes):
        for j in inputs[i]:
            x1, y1, x2, y2 = x[j] + _W / 2, y[j] + _H, x[i] + _W / 2, y[i]
            bend = min(40.0, (y2 - y1) / 2)
            edges.append(f"M{x1:.0f} {y1:.0f}C{x1:.0f} {y1 + bend:.0f} {x2:.0f} {y2 - bend:.0f} {x2:.0f} {y2:.0f}")
        ref = pic.kernels.get(n.name)
        kind = node_kind(n, ref, has_kernels)
        fill = {"placeholder": INPUT_FILL, "get_attr": INPUT_FILL, "output": INPUT_FILL}.get(
            kind, ref.colour if ref else "white")
        target = "" if n.op in ("placeholder", "output") else _op_name(n.target) if n.target else ""
        if kind == "extern":
            target = f"extern {ref.name if ref else ''}".strip()
        stroke = ' stroke-dasharray="4 3"' if kind == "none" else ' stroke-width="2.5"' if kind == "extern" else ""
        tip = n.name + (f" · {ref.name} (kernel {ref.index})" if ref else "") + (f" · {_tensor(n)}" if n.dtype else "")
        parts.append(
            f'<g class="node"><title>{_clip_text(tip, 200)}</title><rect x="{x[i]:.0f}" y="{y[i]:.0f}" width="{_W}" '
            f'height="{_H}" rx="{8 if kind in ("placeholder", "get_attr", "output") else 3}" fill="{fill}" '
            f'stroke="#333"{stroke}/><text x="{x[i] + _W / 2:.0f}" y="{y[i] + 14:.0f}" font-weight="bold">'
            f'{_clip_text(n.name, 28)}</text><text x="{x[i] + _W / 2:.0f}" y="{y[i] + 27:.0f}" font-size="9">'
            f'{_clip_text(target, 32)}</text></g>')
    note = ""
    extra: list[str] = []
    if len(pic.graph.nodes) > len(nodes):
        why = why or f"at most {limit:,} nodes are drawn per graph"
        note = f"{pic.title}: drew the first {len(nodes):,} of {len(pic.graph.nodes):,} nodes ({why})"
        extra.append(f'<g class="more"><rect x="10" y="{height:.0f}" width="{max(width * (_W + _GAP_X), 420)}" '
                     f'height="40" fill="#fff7d6" stroke="#7a5b00"/><text x="20" y="{height + 25:.0f}" '
                     f'text-anchor="start" font-weight="bold">… {len(pic.graph.nodes) - len(nodes):,} more nodes '
                     f"not drawn ({_clip_text(why, 80)})</text></g>")
        height += 50
    for b in pic.breaks:
        where = f"{b.user_frame.short()} in {b.user_frame.function}" if b.user_frame else ""
        extra.append(f'<g class="break"><rect x="10" y="{height:.0f}" width="{max(width * (_W + _GAP_X), 420)}" '
                     f'height="40" fill="{BREAK_FILL}"/><text x="20" y="{height + 25:.0f}" text-anchor="start" '
                     f'fill="white" font-weight="bold">graph break: {_clip_text(b.break_type, 60)} '
                     f"{_clip_text(where, 60)}</text></g>")
        height += 50
    total_w = max(width * (_W + _GAP_X) + 20, 440)
    title = (f'<text x="10" y="18" text-anchor="start" font-weight="bold" font-size="12">{_clip_text(pic.title, 120)}'
             f'</text><text x="10" y="34" text-anchor="start" font-size="9">{len(pic.graph.nodes):,} nodes · '
             f"--graph {_clip_text(pic.key, 40)} · laid out by tcinspect (too large for Graphviz in bounded time)</text>")
    body = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{height + 10:.0f}" '
            f'viewBox="0 0 {total_w:.0f} {height + 10:.0f}" font-size="10" text-anchor="middle" style="{_FONT_CSS}">'
            f'{title}<path d="{"".join(edges)}" fill="none" stroke="#5b6573" stroke-width="0.8" stroke-opacity="0.7"/>'
            + "".join(parts) + "".join(extra) + "</svg>\n")
    return body, len(nodes), note


def stacked(pics: Sequence[Picture], budget: int = LAYERED_MAX_NODES * 4) -> str:
    """Several graphs laid out by ``layered``, one below the other, in one standalone SVG."""
    drawings: list[tuple[str, float, float]] = []
    left = budget
    for pic in pics:
        limit = max(1, min(LAYERED_MAX_NODES, left))
        why = "" if limit == LAYERED_MAX_NODES else f"at most {budget:,} nodes are drawn per picture"
        text, drawn, _ = layered(pic, limit, why)
        left -= drawn
        size = re.search(r'width="(\d+)" height="(\d+)"', text)
        assert size is not None  # layered() always writes the picture's width and height
        w, h = (float(v) for v in size.groups())
        drawings.append((text, w, h))
    width = max(w for _, w, _ in drawings)
    out, y = [], 0.0
    for text, _, h in drawings:
        out.append(text.replace("<svg ", f'<svg x="0" y="{y:.0f}" ', 1).replace(' xmlns="http://www.w3.org/2000/svg"', ""))
        y += h + 20
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
            f'height="{y:.0f}" viewBox="0 0 {width:.0f} {y:.0f}">' + "".join(out) + "</svg>\n")
