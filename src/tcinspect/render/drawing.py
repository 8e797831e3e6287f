"""The HTML page's graph pictures: each graph laid out to inline SVG within the page's node budget (Graphviz where
it is installed and the graph is small enough, tcinspect's own layered layout otherwise), and their legends."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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


class Drawings:
    """Each picture's inline SVG and notes (``get(key)``), laid out while the page is written: Graphviz's layouts run
    in the background from the start (its own processes, on the other cores) and each graph tcinspect lays out
    itself is laid out when the page first asks for it."""

    def __init__(self, total: int, tick: Callable[[int, int], None]) -> None:
        self.ready: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.later: dict[str, Callable[[], tuple[str, tuple[str, ...]]]] = {}
        self.total = total
        self.done = 0
        self.tick = tick
        self.pool: Optional[ThreadPoolExecutor] = None

    def finished(self, key: str, result: tuple[str, tuple[str, ...]]) -> None:
        self.ready[key] = result
        self.done += 1
        self.tick(self.done, self.total)

    def get(self, key: str, default: tuple[str, tuple[str, ...]] = ("", ())) -> tuple[str, tuple[str, ...]]:
        make = self.later.pop(key, None)
        if make is not None:
            self.finished(key, make())
        return self.ready.get(key, default)

    def close(self) -> None:
        """Drop what the page never asked for, after the layouts still running end."""
        self.later.clear()
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def draw(pics: Sequence[Picture], progress: Optional[Callable[[int, int], None]] = None) -> Drawings:
    """Each picture's inline SVG and notes, within the page's node budget (spent in the pictures' order).

    Graphs of up to ``svg.DOT_NODES`` nodes go to Graphviz (in parallel, each for at most
    ``dot.DOT_FALLBACK_S``); larger ones, and any dot did not finish in time, are laid out by
    ``layered.layered``, linear in their size: a page is written in bounded time, never an error.
    ``progress(done, total)`` is called as pictures are finished.
    """
    out = Drawings(len(pics), progress or (lambda d, t: None))
    left = MAX_PAGE_NODES
    jobs: list[tuple[Picture, str, tuple[str, ...]]] = []
    for pic in pics:
        if left <= 0:
            out.finished(pic.key, ("", (f"Not drawn: this page draws at most {MAX_PAGE_NODES:,} nodes in all. "
                                        f"Draw it alone with <code>tcinspect trace REPORT --format svg --graph "
                                        f"{esc(pic.key)} -o graph.svg</code>.",)))
            continue
        if len(pic.graph.nodes) > DOT_NODES:
            limit = min(left, LAYERED_MAX_NODES)
            left -= min(limit, len(pic.graph.nodes))
            out.later[pic.key] = _layered(pic, limit)
            continue
        source = dot.dot_source([pic], legend=False, budget=left)
        left -= source.drawn
        jobs.append((pic, source.text, tuple(f"Cut short: {esc(n)}." for n in source.notes)))
    if jobs:
        out.pool = ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1, 8)))
        for pic, text, notes in jobs:
            future = out.pool.submit(_lay_out, pic, text)
            out.later[pic.key] = _when_laid_out(future, notes)
    return out


def _layered(pic: Picture, limit: int) -> Callable[[], tuple[str, tuple[str, ...]]]:
    def make() -> tuple[str, tuple[str, ...]]:
        why = "" if limit == LAYERED_MAX_NODES else f"at most {MAX_PAGE_NODES:,} nodes are drawn per page"
        drawing, _, note = layered(pic, limit, why)
        return inline(drawing), (f"Cut short: {esc(note)}.",) if note else ()
    return make


def _when_laid_out(future: Future[tuple[str, str]], notes: tuple[str, ...]
                   ) -> Callable[[], tuple[str, tuple[str, ...]]]:
    def make() -> tuple[str, tuple[str, ...]]:
        drawing, error = future.result()
        if error:
            return drawing, (*notes, GRAPHVIZ_MISSING if dot.DOT_MISSING in error else f"Not drawn: {esc(error)}.")
        return drawing, notes
    return make


def _lay_out(pic: Picture, text: str) -> tuple[str, str]:
    try:
        return inline(dot.run_dot(text, timeout=dot.DOT_FALLBACK_S)), ""
    except GraphvizTimeout:
        return inline(layered(pic)[0]), ""
    except GraphvizError as exc:
        if dot.DOT_MISSING in exc.cause:  # a page is always drawn: tcinspect's own layout instead
            return inline(layered(pic)[0]), exc.cause
        return "", exc.cause
