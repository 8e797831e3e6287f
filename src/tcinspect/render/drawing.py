"""The HTML page's graph pictures: each graph laid out to inline SVG within the page's node budget (Graphviz where
it is installed and the graph is small enough, tcinspect's own layered layout otherwise), and their legends."""

from __future__ import annotations

import os
import pickle
import signal
import threading
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
        self.forked: Optional[_Forked] = None

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
        if self.forked is not None:
            self.forked.stop()
            self.forked = None
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
    large: dict[str, Callable[[], tuple[str, tuple[str, ...]]]] = {}
    for pic in pics:
        if left <= 0:
            out.finished(pic.key, ("", (f"Not drawn: this page draws at most {MAX_PAGE_NODES:,} nodes in all. "
                                        f"Draw it alone with <code>tcinspect trace REPORT --format svg --graph "
                                        f"{esc(pic.key)} -o graph.svg</code>.",)))
            continue
        if len(pic.graph.nodes) > DOT_NODES:
            limit = min(left, LAYERED_MAX_NODES)
            left -= min(limit, len(pic.graph.nodes))
            large[pic.key] = _layered(pic, limit)
            continue
        source = dot.dot_source([pic], legend=False, budget=left)
        left -= source.drawn
        jobs.append((pic, source.text, tuple(f"Cut short: {esc(n)}." for n in source.notes)))
    if sum(len(p.graph.nodes) for p in pics if p.key in large) >= FORK_NODES and _can_fork():
        # before Graphviz's threads start: a fork copies the calling thread alone
        forked = out.forked = _Forked(large)
        large = {key: _from_fork(forked, key, make) for key, make in large.items()}
    out.later.update(large)
    if jobs:
        out.pool = ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1, 8)))
        for pic, text, notes in jobs:
            future = out.pool.submit(_lay_out, pic, text)
            out.later[pic.key] = _when_laid_out(future, notes)
    return out


#: Nodes of large graphs on a page from which they are laid out by a forked copy of this process, on another core,
#: while this one writes the rest of the page (a 12-layer GPT-2's log: 0.2 s of 2.4)
FORK_NODES = 2000


def _can_fork() -> bool:
    """Whether a copy of this process can lay out graphs: fork exists, and no other thread runs (a progress bar's,
    a server's), whose locks a copy would inherit held."""
    return hasattr(os, "fork") and threading.active_count() == 1 and os.environ.get(NO_FORK_ENV, "") in ("", "0")


#: Set to 1 to lay out every graph in this process.
NO_FORK_ENV = "TCINSPECT_NO_FORK"


class _Forked:
    """Drawings made by a forked copy of this process, read back through a pipe when first asked for."""

    def __init__(self, makers: dict[str, Callable[[], tuple[str, tuple[str, ...]]]]) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the copy: lay out, hand the drawings back, and end running nothing else of this process
            code = 1
            try:
                os.close(read)
                data = pickle.dumps({k: make() for k, make in makers.items()}, protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent lays these graphs out itself
                pass
            finally:
                os._exit(code)
        os.close(write)
        self.pid, self.read = pid, read
        self.results: Optional[dict[str, tuple[str, tuple[str, ...]]]] = None

    def result(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        if self.results is None:
            with os.fdopen(self.read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(self.pid, 0)
            self.results = {}
            if status == 0 and data:
                try:
                    self.results = pickle.loads(data)
                except Exception:  # noqa: BLE001 - each graph is laid out here instead
                    pass
        return self.results

    def stop(self) -> None:
        """End the copy if its drawings were never read (the page failed, or asked for none)."""
        if self.results is not None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.read)
        os.waitpid(self.pid, 0)
        self.results = {}


def _from_fork(forked: _Forked, key: str, make: Callable[[], tuple[str, tuple[str, ...]]]
               ) -> Callable[[], tuple[str, tuple[str, ...]]]:
    def get() -> tuple[str, tuple[str, ...]]:
        found = forked.result().get(key)
        return found if found is not None else make()
    return get


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
