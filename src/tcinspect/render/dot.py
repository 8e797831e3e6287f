"""Pictures -> Graphviz DOT text -> SVG through Graphviz's ``dot``: the one place that runs a subprocess
to draw. Pure functions of the pictures otherwise; never imports torch.
"""

from __future__ import annotations

import html
import itertools
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tcinspect.errors import GraphvizError, GraphvizTimeout
from tcinspect.render.picture import (
    BREAK_FILL,
    CONTROL,
    INPUT_FILL,
    NODE_NAME,
    SHAPES,
    Picture,
    node_kind,
    op_name,
    tensor_label,
)
from tcinspect.report import GraphBreak, Node

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

#: GraphvizError's cause when ``dot`` is not installed (the renderers then use ``layered``)
DOT_MISSING = "is not on PATH"


@dataclass(frozen=True)
class Dot:
    """DOT text and what had to be left out of the drawing."""

    text: str
    drawn: int
    notes: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- DOT text


def label_text(text: str, width: int = 48) -> str:
    """Text for a DOT HTML-like label: clipped, HTML-escaped, backslashes doubled.

    dot reads ``\\N``, ``\\G`` and ``\\\\`` in labels as escapes even inside HTML-like labels, so
    every backslash is doubled to print as itself.
    """
    text = CONTROL.sub("", text)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return html.escape(text, quote=True).replace("\\", "\\\\")


def _quoted(text: str) -> str:
    """A DOT quoted string (ids, colours, tooltips)."""
    return '"' + CONTROL.sub("", text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lines(*lines: str, small: Sequence[str] = ()) -> str:
    # the first line is the node's name: Dynamo's parameter names run to 40 characters and more
    parts = [f"<B>{label_text(lines[0], 32)}</B>"] + [label_text(x) for x in lines[1:] if x]
    parts += [f'<FONT POINT-SIZE="8">{label_text(x)}</FONT>' for x in small if x]
    return "<" + "<BR/>".join(parts) + ">"


def _title(pic: Picture) -> str:
    return (f"<<B>{label_text(pic.title, 90)}</B><BR/>"
            f'<FONT POINT-SIZE="8">{len(pic.graph.nodes):,} nodes · --graph {label_text(pic.key)}</FONT>>')


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


def _inputs(n: Node, known: Mapping[str, str]) -> list[str]:
    """The ids of the nodes whose names appear in ``n``'s arguments (its FX inputs)."""
    return list(dict.fromkeys(known[t] for t in NODE_NAME.findall(n.args) if t in known))


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
        target = "" if n.op in ("placeholder", "output") else op_name(n.target) if n.target else ""
        if kind == "extern":
            target = f"extern {ref.name if ref else ''}".strip()
        label = _lines(n.name, target, small=[tensor_label(n)])
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
