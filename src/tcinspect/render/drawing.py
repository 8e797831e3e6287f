"""The HTML page's graph pictures: each graph laid out to inline SVG within the page's node budget (Graphviz where
it is installed and the graph is small enough, tcinspect's own layered layout otherwise), and their legends."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from tcinspect.errors import GraphvizError, GraphvizTimeout
from tcinspect.render import dot
from tcinspect.render.htmlparts import esc
from tcinspect.render.layered import LAYERED_MAX_NODES, layered
from tcinspect.render.picture import KernelRef, Picture
from tcinspect.render.svg import DOT_NODES, inline

#: Nodes drawn on one page in all. Each graph is laid out alone, in parallel, so a page affords
#: more than one standalone picture (``dot.MAX_PICTURE_NODES``); large graphs are drawn by
#: ``layered.layered``, and every picture above OPEN_PICTURE_NODES stays inert text until opened.
MAX_PAGE_NODES = 12000

GRAPHVIZ_MISSING = ("Drawn by tcinspect's own layered layout: Graphviz's <code>dot</code> was not found. Install "
                     "Graphviz (<code>apt-get install graphviz</code> or <code>brew install graphviz</code>) for "
                     "dot's layout.")


def swatch(ref: Optional[KernelRef]) -> str:
    if ref is None:
        return ""
    css = "sw ext" if ref.extern else "sw"
    return f'<span class="{css}" style="background:{ref.colour}"></span>'


def legend(pic: Picture) -> str:
    refs = sorted({r.index: r for r in pic.kernels.values()}.values(), key=lambda r: r.index)
    keys = "".join(f'<li>{swatch(r)}{"extern " if r.extern else ""}{esc(r.name)}</li>' for r in refs)
    shapes = '<li><span class="sw in"></span>graph input</li>'
    if refs:
        shapes += ('<li><span class="sw ext" style="background:#d4d4d4"></span>extern kernel (library call)</li>'
                   '<li><span class="sw none"></span>no kernel recorded (views, constants, or not traced to one)</li>')
    if pic.breaks:
        shapes += '<li><span class="sw brk"></span>graph break</li>'
    return f'<ul class="legend">{keys}{shapes}</ul>'


def draw(pics: Sequence[Picture], progress: Optional[Callable[[int, int], None]] = None
          ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each picture's inline SVG and notes, within the page's node budget.

    Graphs of up to ``svg.DOT_NODES`` nodes go to Graphviz (in parallel, each for at most
    ``dot.DOT_FALLBACK_S``); larger ones, and any dot did not finish in time, are laid out by
    ``layered.layered``, linear in their size: a page is written in bounded time, never an error.
    ``progress(done, total)`` is called as pictures are finished.
    """
    jobs: list[tuple[Picture, str]] = []
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    left = MAX_PAGE_NODES
    done = 0
    tick = progress or (lambda d, t: None)
    for pic in pics:
        if left <= 0:
            out[pic.key] = ("", (f"Not drawn: this page draws at most {MAX_PAGE_NODES:,} nodes in all. "
                                 f"Draw it alone with <code>tcinspect trace REPORT --format svg --graph "
                                 f"{esc(pic.key)} -o graph.svg</code>.",))
            done += 1
            continue
        if len(pic.graph.nodes) > DOT_NODES:
            limit = min(left, LAYERED_MAX_NODES)
            why = "" if limit == LAYERED_MAX_NODES else f"at most {MAX_PAGE_NODES:,} nodes are drawn per page"
            drawing, drawn, note = layered(pic, limit, why)
            left -= drawn
            out[pic.key] = (inline(drawing), (f"Cut short: {esc(note)}.",) if note else ())
            done += 1
            tick(done, len(pics))
            continue
        source = dot.dot_source([pic], legend=False, budget=left)
        left -= source.drawn
        notes = tuple(f"Cut short: {esc(n)}." for n in source.notes)
        out[pic.key] = ("", notes)
        jobs.append((pic, source.text))

    def lay_out(job: tuple[Picture, str]) -> tuple[str, str]:
        try:
            return inline(dot.run_dot(job[1], timeout=dot.DOT_FALLBACK_S)), ""
        except GraphvizTimeout:
            return inline(layered(job[0])[0]), ""
        except GraphvizError as exc:
            if dot.DOT_MISSING in exc.cause:  # a page is always drawn: tcinspect's own layout instead
                return inline(layered(job[0])[0]), exc.cause
            return "", exc.cause

    workers = max(1, min(len(jobs), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for (pic, _), (drawing, error) in zip(jobs, pool.map(lay_out, jobs)):
            notes = out[pic.key][1]
            if error:
                notes += (GRAPHVIZ_MISSING if dot.DOT_MISSING in error else f"Not drawn: {esc(error)}.",)
            out[pic.key] = (drawing, notes)
            done += 1
            tick(done, len(pics))
    return out
