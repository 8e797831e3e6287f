"""Report -> SVG (``--format svg``), and an SVG as an element of the HTML page.

Graphviz (tcinspect.render.dot) lays out a picture of small graphs; tcinspect's own layout
(tcinspect.render.layered) draws larger ones, any dot does not finish in time, and all of them where
Graphviz is not installed. What each picture shows is tcinspect.render.picture. Never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tcinspect.errors import GraphvizError, GraphvizTimeout, UsageError
from tcinspect.render import dot
from tcinspect.render.layered import stacked
from tcinspect.render.picture import pictures, select
from tcinspect.report import Report

#: Graphs with more nodes than this are laid out by ``layered`` rather than Graphviz: dot's time is
#: not a function of the size alone (on 2 CPU cores a 289-node GPT-2 forward graph took 3.9 s and a
#: 333-node backward 0.3 s; a 1,500-node one over 20 s), while this layout is linear in nodes and edges.
DOT_NODES = 200


def svg(rep: Report, graphs: Sequence[str] = ()) -> str:
    """The standalone SVG of ``--format svg``: every graph (or those picked) in one picture."""
    pics = pictures(rep)
    if graphs:
        pics = select(pics, graphs)
    if not pics:
        raise UsageError("this report has no graph to draw", "trace a model that compiles at least one graph")
    if all(len(p.graph.nodes) <= DOT_NODES for p in pics) and sum(len(p.graph.nodes) for p in pics) <= dot.MAX_PICTURE_NODES:
        try:
            return dot.run_dot(dot.dot_source(pics).text, timeout=dot.DOT_FALLBACK_S)
        except GraphvizTimeout:
            pass  # drawn below, in bounded time
        except GraphvizError as exc:
            if dot.DOT_MISSING not in exc.cause:
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
