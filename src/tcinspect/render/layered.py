"""tcinspect's own layered layout: pictures -> SVG in time linear in nodes and edges, for graphs too large for
Graphviz in bounded time, and where Graphviz is not installed. Pure; never imports torch.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from tcinspect.render.picture import (
    BREAK_FILL,
    CONTROL,
    INPUT_FILL,
    NODE_NAME,
    Picture,
    node_kind,
    op_name,
    tensor_label,
)

#: Nodes ``layered`` draws per graph; past it the picture ends with a marker naming what was left out.
LAYERED_MAX_NODES = 6000
#: Nodes side by side in one row of ``layered``: wider ranks (a model's 150 parameters) wrap.
ROW_NODES = 12
_W, _H, _GAP_X, _GAP_Y = 176, 34, 14, 22
_FONT_CSS = "font-family:Helvetica,Arial,sans-serif"


def _clip_text(text: str, width: int) -> str:
    text = CONTROL.sub("", text)
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
        ins = list(dict.fromkeys(index[t] for t in NODE_NAME.findall(n.args) if t in index))
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
        target = "" if n.op in ("placeholder", "output") else op_name(n.target) if n.target else ""
        if kind == "extern":
            target = f"extern {ref.name if ref else ''}".strip()
        stroke = ' stroke-dasharray="4 3"' if kind == "none" else ' stroke-width="2.5"' if kind == "extern" else ""
        tip = n.name + (f" · {ref.name} (kernel {ref.index})" if ref else "") + (f" · {tensor_label(n)}" if n.dtype else "")
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
