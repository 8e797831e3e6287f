"""Compile time rendered: a terminal table, a Chrome trace-event file, an inline SVG timeline. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import caches as cache_views
from tcinspect.analysis import compile_time as views
from tcinspect.derived import cachekeys
from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.report import CompileTime, CompileTiming, Phase, Report
from tcinspect.vocabulary import GROUP_TITLES, GROUPS

if TYPE_CHECKING:
    from rich.tree import Tree

#: One colour per phase group (the HTML timeline and its legend).
COLOURS = {
    "dynamo": "#4e79a7", "aot_autograd": "#f28e2b", "graph_passes": "#edc948", "lowering": "#59a14f",
    "scheduling": "#76b7b2", "codegen": "#b07aa1", "compile": "#e15759", "autotune": "#ff9da7",
    "cache": "#9c755f", "inductor": "#8cd17d", "other": "#bab0ac",
}
_SHORT = {"dynamo": "dynamo", "aot_autograd": "aot", "graph_passes": "passes", "lowering": "lower",
          "scheduling": "sched", "codegen": "codegen", "compile": "compile", "autotune": "autotune",
          "cache": "cache", "inductor": "inductor", "other": "other"}


def _cache_text(t: CompileTiming, cache: str) -> str:
    states = [f"{c.state}" + (f" ({c.part})" if c.part and c.part != t.part else "")
              for c in t.caches if c.cache == cache]
    return ", ".join(states)


def table(rep: Report) -> RenderableType:
    """Totals, the phases of the run, the slowest compiles and phases, the caches and what to do."""
    ct = views.compile_time_of(rep)
    doc = views.document(rep)
    parts: list[RenderableType] = []
    head = Text()
    head.append("Compile time ", style="bold")
    head.append(f"{doc['total_s']:.2f} s", style="bold")
    head.append(f"  forward {doc['forward_s']:.2f} s · backward {doc['backward_s']:.2f} s · "
                f"{len([t for t in ct.compiles if t.part != 'runtime'])} compiles", style="dim")
    if doc["runtime_s"]:
        split = ", ".join(f"{_SHORT[g]} {s:.2f} s" for g, s in sorted(doc["runtime_phases_s"].items(),
                                                                     key=lambda kv: -kv[1])[:3])
        head.append(f"\n  and {doc['runtime_s']:.2f} s timed at the first calls, after the compile ({split})",
                    style="dim")
    parts.append(head)
    if rep.compile_time is None:
        parts.append(Text("this report holds no phase spans (written by an older tcinspect): totals only",
                          style="yellow"))

    total = doc["total_s"] or 1.0
    phases = Table(title="Phases (exclusive time, all compiles)", title_justify="left", box=None, padding=(0, 2))
    phases.add_column("phase")
    phases.add_column("seconds", justify="right")
    phases.add_column("share", justify="right")
    phases.add_column("")
    for g, s in sorted(doc["phases_s"].items(), key=lambda kv: -kv[1]):
        phases.add_row(GROUP_TITLES[g], f"{s:.3f}", f"{100 * s / total:.0f}%", "█" * max(int(30 * s / total), 0))
    if doc["phases_s"]:
        parts.append(phases)

    slow = Table(title="Slowest compiles", title_justify="left", box=None, padding=(0, 1))
    for col in ("compile", "part", "function", "seconds", "where it went", "FX graph cache", "AOT cache"):
        slow.add_column(col, justify="right" if col == "seconds" else "left")
    for t in views.slowest(ct):
        gs = sorted(views.groups(t).items(), key=lambda kv: -kv[1])[:2]
        slow.add_row(t.compile_id, t.part, t.function, f"{t.total_s:.3f}",
                     " · ".join(f"{_SHORT[g]} {s:.2f}" for g, s in gs),
                     _cache_text(t, "fx_graph"), _cache_text(t, "aot_autograd"))
    parts.append(slow)

    top = views.slowest_phases(ct)
    if top:
        spans = Table(title="Slowest phases (exclusive time, summed by name)", title_justify="left", box=None,
                      padding=(0, 2))
        spans.add_column("span")
        spans.add_column("group")
        spans.add_column("seconds", justify="right")
        spans.add_column("count", justify="right")
        for p in top:
            spans.add_row(p.name, p.group, f"{p.seconds:.3f}", str(p.count))
        parts.append(spans)

    caches = Text("Caches: ", style="bold")
    for name, label in (("fx_graph", "FX graph cache"), ("aot_autograd", "AOTAutograd cache")):
        counts = doc["caches"].get(name) or {}
        text = " · ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "no look-up recorded"
        caches.append(f"{label} {text}   ", style="")
    if ct.compile_threads:
        caches.append(f"compile_threads {ct.compile_threads}", style="dim")
    parts.append(caches)
    saves = cache_views.warm_start_saves(rep)
    if saves:
        parts.append(Text(f"  a warm start would save {saves:.2f} s (what the FX graph cache misses took to "
                          "compile, by torch's measure)", style="dim"))
        reused = cache_views.kernel_code_reused(doc["phases_s"].get("compile", 0.0), saves)
        if reused:
            parts.append(Text(f"  {reused}", style="dim"))
    for t, c in cachekeys.lookups(ct):
        why = cache_views.explanation(c)
        if c.state in ("miss", "bypass") and why:
            title = cachekeys.CACHE_TITLES.get(c.cache, c.cache)
            line = Text(f"  {t.compile_id} {c.part or t.part} {title} {c.state}: ", style="yellow")
            line.append(why)
            site = cache_views.bypass_site(rep, t, c) if c.state == "bypass" else ""
            if site:
                line.append(f" — at {site}")
            parts.append(line)
        for r in c.remote:
            parts.append(Text(f"  {t.compile_id} {c.part or t.part} {c.cache} remote {r}", style="dim"))

    if ct.findings:
        parts.append(Text("What to do", style="bold"))
        for f in ct.findings:
            line = Text(f"  {f.seconds:6.2f} s  " if f.seconds else "           ")
            line.append(f.message)
            parts.append(line)
            parts.append(Text(f"           fix: {f.fix}", style="green"))
    else:
        parts.append(Text("Nothing to fix found in the compile time.", style="dim"))
    return Group(*parts)


def trees(rep: Report, share: float = 0.01) -> RenderableType:
    """Each compile's phase tree, slowest compile first: inclusive and exclusive seconds, with a span's
    own time (not in any span inside it) as "other"; spans under ``share`` of the compile are summed."""
    from rich.tree import Tree

    ct = views.compile_time_of(rep)
    parts: list[RenderableType] = []
    for t in views.slowest(ct, len(ct.compiles)):
        if t.root is None:
            continue
        tree = Tree(_row(f"{t.compile_id} {t.part} ({t.root.name})", t.root.group, t.root.seconds, t.root.self_s))
        _add_phases(tree, t.root, share * t.root.seconds)
        parts.append(tree)
    return Group(*parts) if parts else Text("no phase spans in this report", style="yellow")


def _add_phases(node: Tree, p: Phase, floor: float) -> None:
    """``p``'s children under ``node``, each from ``floor`` seconds up as its own subtree, the rest summed."""
    small = [c for c in p.children if c.seconds < floor]
    for c in p.children:
        if c.seconds >= floor:
            _add_phases(node.add(_row(c.name, c.group, c.seconds, c.self_s)), c, floor)
    if small:
        node.add(Text(f"{len(small)} smaller span{'s' if len(small) > 1 else ''}  "
                      f"{sum(c.seconds for c in small):.3f} s", style="dim"))
    if p.children and p.self_s >= floor:
        node.add(Text(f"other  {p.self_s:.3f} s", style="dim"))


def _row(name: str, group: str, seconds: float, own: float) -> Text:
    text = Text(name, style="bold" if seconds >= 1 else "")
    text.append(f"  {seconds:.3f} s", style="")
    text.append(f"  ({own:.3f} s own · {group})", style="dim")
    return text


# ----------------------------------------------------------------------------- Chrome trace events


def _tracks(rep: Report) -> list[tuple[int, str, CompileTime]]:
    """(pid, label, compile time) per rank of a merged report, or the one report's."""
    if rep.ranks:
        return [(r.rank, f"rank {r.rank}", r.compile_time) for r in rep.ranks if r.compile_time is not None]
    if rep.compile_time is None:
        return []
    return [(0, rep.target.path or rep.target.model_name or "compile", rep.compile_time)]


def _x(name: str, cat: str, pid: int, tid: int, ts: int, dur: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _nested(p: Phase, base_us: float, pid: int, tid: int, lo: int, hi: int, label: str, args: dict[str, Any],
            out: list[dict[str, Any]]) -> int:
    """Append a phase and its children as complete ("X") events; returns where it ends (µs).

    Each event is clamped inside its parent and after its previous sibling, so that rounding to
    whole microseconds never breaks the nesting.
    """
    start = min(max(round(base_us + p.start_s * 1e6), lo), hi)
    end = max(min(round(base_us + (p.start_s + p.seconds) * 1e6), hi), start)
    out.append(_x(label, p.group, pid, tid, start, end - start,
                  {**args, "inclusive_s": p.seconds, "exclusive_s": p.self_s, "group": p.group}))
    cursor = start
    for c in p.children:
        cursor = _nested(c, base_us, pid, tid, cursor, end, c.name, {}, out)
    return end


def chrome_trace(rep: Report) -> str:
    """The compile as Chrome trace-event JSON (Perfetto, chrome://tracing): one process per rank,
    thread 0 the compiling thread, threads 1+ the compile workers' spans (laid out so none overlap)."""
    events: list[dict[str, Any]] = []
    for pid, label, ct in _tracks(rep):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "compile"}})
        lanes: list[int] = []  # end (µs) of the last worker span in each lane
        for t in ct.compiles:
            if t.root is None:
                continue
            base = t.start_s * 1e6
            root_label = f"{t.compile_id} {t.part}"
            _nested(t.root, base, pid, 0, round(base), round(base + t.root.seconds * 1e6), root_label,
                    {"compile_id": t.compile_id, "part": t.part, "function": t.function, "total_s": t.total_s}, events)
            for w in t.workers:
                start = round(base + w.start_s * 1e6)
                end = start + round(w.seconds * 1e6)
                lane = next((i for i, busy in enumerate(lanes) if busy <= start), None)
                if lane is None:
                    lanes.append(end)
                    lane = len(lanes) - 1
                    events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane + 1,
                                   "args": {"name": f"compile worker {lane + 1}"}})
                lanes[lane] = end
                _nested(w, base, pid, lane + 1, start, end, w.name, {"compile_id": t.compile_id}, events)
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}, indent=None) + "\n"


# ----------------------------------------------------------------------------- HTML timeline

_ROW = 14  # px per depth row
_WIDTH = 1000
_MAX_DEPTH = 10


def _bars(p: Phase, scale: float, depth: int, out: list[str], root: bool = False) -> None:
    width = p.seconds * scale
    if width < 0.5 or depth >= _MAX_DEPTH:
        return
    x = p.start_s * scale
    title = f"{p.name} · {p.seconds:.3f} s inclusive, {p.self_s:.3f} s exclusive · {GROUP_TITLES.get(p.group, p.group)}"
    colour = COLOURS["other"] if root else COLOURS.get(p.group, COLOURS["other"])
    out.append(f'<rect x="{x:.1f}" y="{depth * _ROW}" width="{max(width, 0.5):.1f}" height="{_ROW - 2}" '
               f'fill="{colour}"><title>{esc(title)}</title></rect>')
    if width > 60:
        out.append(f'<text x="{x + 3:.1f}" y="{depth * _ROW + 10}" font-size="9" fill="#fff">'
                   f"{esc(p.name[: int(width / 5.5)])}</text>")
    for c in p.children:
        _bars(c, scale, depth + 1, out)


def _depth(p: Phase) -> int:
    return 1 + max((_depth(c) for c in p.children), default=0)


def timeline(ct: CompileTime, limit: int = 40) -> str:
    """Each compile's phases as nested bars (forward and backward), drawn in inline SVG, slowest first."""
    rows = []
    for t in views.slowest(ct, limit):
        if t.root is None:
            continue
        depth = min(_depth(t.root), _MAX_DEPTH)
        scale = _WIDTH / max(t.root.seconds, 1e-9)
        bars: list[str] = []
        _bars(t.root, scale, 0, bars, root=True)
        gs = views.groups(t)
        split = " · ".join(f"{_SHORT[g]} {s:.2f}" for g, s in sorted(gs.items(), key=lambda kv: -kv[1])[:5])
        caches = "; ".join(f"{c.cache} {c.state}" + (f" ({c.part})" if c.part and c.part != t.part else "")
                           for c in t.caches)
        rows.append(
            f'<div class="ctrow"><p><b>{esc(t.compile_id)} {esc(t.part)}</b> {esc(t.function)} · '
            f"{t.total_s:.3f} s · {esc(split)}{' · ' + esc(caches) if caches else ''}</p>"
            f'<svg class="ct" viewBox="0 0 {_WIDTH} {depth * _ROW}" width="100%" height="{depth * _ROW}" '
            f'preserveAspectRatio="none" role="img" aria-label="phases of {esc(t.compile_id)} {esc(t.part)}">'
            + "".join(bars) + "</svg></div>")
    if not rows:
        return ""
    legend = "".join(f'<span class="ctkey"><svg width="10" height="10"><rect width="10" height="10" '
                     f'fill="{COLOURS[g]}"/></svg> {esc(GROUP_TITLES[g])}</span>' for g in GROUPS)
    return f'<div class="ctlegend">{legend}</div>' + "".join(rows)


def findings_html(ct: CompileTime) -> str:
    if not ct.findings:
        return '<p class="note">Nothing to fix found in the compile time.</p>'
    items = "".join(f"<li>{esc(f.message)}<br><span class=\"fix\">fix: {esc(f.fix)}</span></li>" for f in ct.findings)
    return f"<ul class=\"ctfind\">{items}</ul>"


def group_rows(ct: CompileTime) -> Sequence[tuple[str, float]]:
    return sorted(views.run_groups(ct).items(), key=lambda kv: -kv[1])


def section_html(rep: Report) -> str:
    """Each compile's phases as nested bars, forward and backward, and what to do about them."""
    ct = rep.compile_time
    if ct is None:
        return ""
    from tcinspect.render import compile_time as compile_time_view

    total = sum(s for _, s in compile_time_view.group_rows(ct)) or 1.0
    split = " · ".join(f"{esc(g)} {s:.2f} s ({100 * s / total:.0f}%)" for g, s in compile_time_view.group_rows(ct)[:6])
    return (f'<section id="compile-time"><h2>Compile time</h2><p class="meta">{ct.total_s:.2f} s over '
            f"{len(ct.compiles)} compiles · {split}</p>{compile_time_view.findings_html(ct)}"
            f"{compile_time_view.timeline(ct)}</section>")


def caches_html(rep: Report) -> str:
    """Every compile-cache look-up: hit, miss or bypass, torch's reason, the key components that changed."""
    from tcinspect.analysis import caches
    from tcinspect.derived import cachekeys

    found = list(cachekeys.lookups(rep.compile_time))
    if not found:
        return ""
    counts: dict[str, int] = {}
    rows = []
    for t, c in found:
        counts[c.state] = counts.get(c.state, 0) + 1
        why = caches.explanation(c)
        where = caches.bypass_site(rep, t, c) if c.state == "bypass" else ""
        changed = "<br>".join(esc(x) for x in c.changed)
        seconds = c.saved_s if c.state == "hit" else c.cost_s
        rows.append(f"<tr><td>{esc(t.compile_id)}<td>{esc(c.part or t.part)}<td>{esc(cachekeys.CACHE_TITLES.get(c.cache, c.cache))}"
                    f"<td>{esc(c.state)}<td class=num>{f'{seconds:.3f}' if seconds else ''}<td>{esc(why)}"
                    f"{'<br>at ' + esc(where) if where else ''}<td>{changed}<td><code>{esc(c.key[:16])}</code>")
    saves = caches.warm_start_saves(rep)
    meta = " · ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    meta += f" · a warm start would save {saves:.2f} s" if saves else ""
    return ('<section id="caches"><h2>Cache look-ups</h2>'
            f'<p class="meta">{esc(meta)}</p><table><thead><tr><th>compile<th>part<th>cache<th>state'
            "<th>s saved (hit) / taken (miss)<th>why (torch's reason)<th>changed components<th>key</thead><tbody>"
            + "".join(rows) + "</tbody></table></section>")
