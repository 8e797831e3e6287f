"""A distributed report -> the per-rank table, the divergence section and DDPOptimizer's splits.

Pure: never prints, never imports torch. Each function falls back to the single-process view when
the report has no ``ranks``, so a command can call it either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import divergence as rank_divergence
from tcinspect.derived.runs import TITLES
from tcinspect.render import table as single
from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.render.parts import code_panel
from tcinspect.report import OK, DdpSplit, Divergence, Report
from tcinspect.vocabulary import outcome, ranks_cut

_STATUS_STYLE = {OK: "green", "failed": "bold red", "error": "bold red", "crashed": "bold red",
                 "timed_out": "bold red", "stopped": "yellow", "missing": "bold red"}
_COLUMNS = (("graphs", "graphs"), ("graph_breaks", "breaks"), ("recompiles", "recompiles"), ("guards", "guards"),
            ("kernels", "kernels"), ("ddp_buckets", "DDP buckets"), ("collectives", "collectives"))


#: above this many ranks, the table has one row per group of ranks with the same status, counts and note
RANK_ROWS = 16
#: divergences shown, and groups of ranks shown for each (the YAML/JSON has them all)
DIVERGENCE_ROWS = 30
DIVERGENCE_GROUPS = 8
#: spans of a rank list shown in a table cell before it is cut (the YAML/JSON lists every rank)
RANK_SPANS = 6


def ranks_short(ranks: Sequence[int], spans: int = RANK_SPANS) -> str:
    """``ranks 0-4, 6-12, … (896 ranks)``: a rank list cut to a few spans for a table cell."""
    return ranks_cut(ranks, spans)


def ranks_table(rep: Report) -> Table:
    """One row per rank: how it ended and its counts; a count that differs from most ranks' is marked. Past
    ``RANK_ROWS`` ranks, one row per group of ranks that ended alike with the same counts, largest group first."""
    rows = rank_divergence.rank_values(rep)
    # the DDP column only where DDPOptimizer split a graph
    columns = [(k, label) for k, label in _COLUMNS
               if k not in ("ddp_buckets", "collectives") or any(v[k] for _, v in rows)]
    usual = {key: Counter(v[key] for _, v in rows).most_common(1)[0][0] for key, _ in columns} if rows else {}
    source = "TORCH_TRACE logs" if rep.target.kind == "torch_trace" else "torchrun"
    if len(rows) > RANK_ROWS:
        return _grouped_table(rows, columns, usual, source)
    t = Table(title=f"Ranks · {len(rows)} ({source})", title_justify="left", header_style="bold")
    t.add_column("rank", justify="right")
    t.add_column("status")
    for _, label in columns:
        t.add_column(label, justify="right")
    t.add_column("compile", justify="right", style="dim")
    t.add_column("note")
    for r, values in rows:
        cells = [Text(str(values[key]), style="" if values[key] == usual[key] else "bold yellow") for key, _ in columns]
        note = outcome(r)
        t.add_row(str(r.rank), Text(r.status, style=_STATUS_STYLE.get(r.status, "")), *cells,
                  f"{values['compile_time_s']:.2f} s", Text(note, style="red" if r.status != OK else "dim"))
    return t


def _grouped_table(rows: Sequence[tuple[Any, dict[str, Any]]], columns: Sequence[tuple[str, str]],
                   usual: dict[str, Any], source: str) -> Table:
    """The ranks table of a large job: identical ranks as one row (compile time as its range), outliers apart."""
    groups: dict[Any, list[tuple[Any, dict[str, Any]]]] = {}
    for r, values in rows:
        key = (r.status, outcome(r), *(values[k] for k, _ in columns))
        groups.setdefault(key, []).append((r, values))
    ordered = sorted(groups.values(), key=lambda g: (-len(g), g[0][0].rank))
    t = Table(title=f"Ranks · {len(rows)} ({source}) · {len(ordered)} groups of ranks that ended alike with the same "
                    "counts, largest first", title_justify="left", header_style="bold")
    t.add_column("ranks")
    t.add_column("n", justify="right")
    t.add_column("status")
    for _, label in columns:
        t.add_column(label, justify="right")
    t.add_column("compile", justify="right", style="dim")
    t.add_column("note")
    for members in ordered:
        r, values = members[0]
        cells = [Text(str(values[key]), style="" if values[key] == usual[key] else "bold yellow") for key, _ in columns]
        times = [v["compile_time_s"] for _, v in members]
        span = f"{min(times):.2f} s" if max(times) - min(times) < 0.005 else f"{min(times):.2f}–{max(times):.2f} s"
        t.add_row(ranks_short([m.rank for m, _ in members]), str(len(members)),
                  Text(r.status, style=_STATUS_STYLE.get(r.status, "")), *cells, span,
                  Text(outcome(r), style="red" if r.status != OK else "dim"))
    return t


def divergence(rep: Report) -> RenderableType:
    """Where ranks differ, first compile first; or a line saying they agree."""
    return divergence_table(rep, rep.divergence)  # found as the ranks were merged


def divergence_table(rep: Report, divs: Sequence[Divergence]) -> RenderableType:
    """``divs`` as the divergence section shows them: the first ``DIVERGENCE_ROWS``, each cut to
    ``DIVERGENCE_GROUPS`` groups of ranks."""
    if not divs and any(r.status != OK for r in rep.ranks):
        # ranks that all failed alike agree on nothing worth saying: their error is the answer
        bad = [r for r in rep.ranks if r.status != OK]
        ended = ", ".join(f"rank {r.rank} {r.status}" for r in bad[:RANK_SPANS]) + (
            f", … ({len(bad)} ranks)" if len(bad) > RANK_SPANS else "")
        return Text(f"Divergence: not judged — not every rank finished ({ended}); see the error", style="bold yellow")
    if not divs:
        # torch records the order only where the job asked for it (record_and_log_graph_execution_order)
        ran = sum(1 for r in rep.ranks if r.graph_execution_order) >= 2
        return Text(f"Divergence: none — all {len(rep.ranks)} ranks compiled the same graphs, breaks, guards, "
                    "recompiles, kernels, collectives and DDP splits"
                    + (", and ran their compiled graphs in one order" if ran else ""), style="bold green")
    first = rank_divergence.first_compile(divs)
    head = Text("Divergence: ", style="bold red")
    ended_differently = any(d.aspect == "status" for d in divs)
    # what the job feels first (compiles, collectives and graphs one group of ranks runs and another does not), then
    # where the ranks' recordings first differ, which may be only what they check (guards)
    consequence = rank_divergence.consequence(rep, divs)
    if consequence:
        head.append(("ranks ended differently; " if ended_differently else "") + consequence, style="bold")
        ended_differently = False  # said
    if first:
        aspects = ", ".join(d.aspect for d in divs if d.compile_id == first)
        head.append(("\n  " if consequence else "") + ("ranks ended differently, and " if ended_differently else
                                                       "ranks ") + f"differ first at compile {first} ({aspects})",
                    style="bold")
    elif ended_differently:
        head.append("ranks ended differently", style="bold")
    elif not consequence:  # the run as a whole: the order ranks ran their compiled graphs in (execution_order)
        head.append(f"ranks differ in the run ({', '.join(d.aspect for d in divs)})", style="bold")
    t = Table(header_style="bold", show_lines=True)
    t.add_column("compile")
    t.add_column("what")
    t.add_column("ranks", style="cyan")
    t.add_column("had")
    for d in divs[:DIVERGENCE_ROWS]:
        style = "bold" if d.compile_id == first and first else ""
        for i, g in enumerate(d.groups[:DIVERGENCE_GROUPS]):
            t.add_row(Text(d.compile_id or "run", style=style) if i == 0 else "", d.aspect if i == 0 else "",
                      ranks_short(g.ranks), g.value)
        rest = d.groups[DIVERGENCE_GROUPS:]
        if rest:
            t.add_row("", "", f"… {sum(len(g.ranks) for g in rest)} ranks",
                      Text(f"in {len(rest)} more groups (use --format yaml)", style="dim"))
    if len(divs) > DIVERGENCE_ROWS:
        return Group(head, t, Text(f"… {len(divs) - DIVERGENCE_ROWS} more divergences (use --format yaml)",
                                   style="dim"))
    return Group(head, t)


def ddp_split(split: DdpSplit, code: bool = False) -> RenderableType:
    """One DDPOptimizer split: its children in forward order, each with its bucket's parameters."""
    n = len(split.children)
    t = Table(title=f"optimize_ddp_split_graph {split.compile_id} · DDPOptimizer split the Dynamo graph into {n} "
                    f"submodules at DDP bucket boundaries", title_justify="left", header_style="bold")
    t.add_column("#", justify="right", style="dim")
    t.add_column("submodule", style="cyan")
    t.add_column("bucket", justify="right")
    t.add_column("ops", justify="right")
    t.add_column("parameters (the bucket)")
    t.add_column("size", justify="right")
    t.add_column("user lines", style="dim")
    for i, c in enumerate(split.children):
        graph = c.graph
        lines = sorted({n.source.short() for n in graph.nodes if n.source is not None}) if graph else []
        t.add_row(str(i), c.name, str(c.bucket), str(graph.op_count if graph else ""), ", ".join(c.parameters) or "-",
                  _size(c.parameter_bytes), ", ".join(lines))
    parts: list[RenderableType] = [t]
    order = " → ".join(c.name for c in split.children)
    last = split.children[-1].name if split.children else ""
    parts.append(Text(f"  forward: {order} · in backward DDP all-reduces bucket 0 ({last}) first", style="dim"))
    if code:
        parts.append(code_panel(split.graph.code, f"optimize_ddp_split_graph {split.compile_id}"))
        for c in split.children:
            if c.graph is not None:
                parts.append(code_panel(c.graph.code, f"optimize_ddp_split_child {c.name} (bucket {c.bucket})"))
    return Group(*parts)


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B" if n else ""


def ddp_splits(rep: Report, code: bool = False) -> RenderableType:
    """Rank 0's DDP splits (the divergence section says when another rank's differ)."""
    source = next((r for r in rep.ranks if r.ddp_splits), None)
    if source is None:
        return Text("DDP graph splits: none (no DDP module, or each graph fit in one bucket)", style="dim")
    parts: list[RenderableType] = [Text(f"DDP graph splits · rank {source.rank}", style="bold magenta")]
    parts += [ddp_split(s, code) for s in source.ddp_splits]
    return Group(*parts)


def overview(rep: Report, code: bool = False) -> RenderableType:
    """The per-rank table, the divergence section and the DDP splits (when DDPOptimizer split a graph)."""
    parts: list[RenderableType] = [ranks_table(rep)]
    spread = rank_divergence.compile_spread(rep)
    if spread:
        parts.append(Text(f"compile time: {spread}", style="bold yellow"))
    if rep.mixed_runs:  # the warning on stderr says each in full
        said = [f"{TITLES.get(m.what, m.what)} ({' / '.join(ranks_short(g.ranks) for g in m.groups)})"
                for m in rep.mixed_runs]
        parts.append(Text(f"logs: not one run's — {', '.join(said)}; mixed_runs in YAML/JSON says what differs",
                          style="bold yellow"))
    parts += [Text(""), divergence(rep)]
    if any(r.ddp_splits for r in rep.ranks):
        parts += [Text(""), ddp_splits(rep, code)]
    return Group(*parts)


def trace(rep: Report, stages: Optional[Sequence[str]] = None, code: bool = False,
          limit: Optional[int] = single.ROW_LIMIT) -> RenderableType:
    """`trace`: the overview, then rank 0's stages (every rank's are in YAML/JSON)."""
    if not rep.ranks:
        return single.trace(rep, stages, code, limit)
    return Group(single.header(rep), Text(""), overview(rep, code), Text(""),
                 Text("Rank 0's stages follow; every rank's are under `ranks` in YAML/JSON.", style="dim"),
                 single.trace(rep, stages, code, limit))


def per_rank(rep: Report, view: Callable[[Report], RenderableType], key: Callable[[Report], Any]) -> RenderableType:
    """The overview, then ``view`` once per group of ranks whose ``key`` is the same."""
    if not rep.ranks:
        return view(rep)
    groups: dict[Any, list[int]] = {}
    reports = {r.rank: rank_divergence.rank_report(rep, r) for r in rep.ranks}
    for rank, r in reports.items():
        groups.setdefault(key(r), []).append(rank)
    parts: list[RenderableType] = [overview(rep), Text("")]
    for ranks in groups.values():
        same = " (the same on each)" if len(ranks) > 1 else ""
        parts.append(Text(f"── {ranks_short(ranks)}{same} ──", style="bold cyan"))
        parts.append(view(reports[ranks[0]]))
        parts.append(Text(""))
    return Group(*parts)


def section_html(rep: Report) -> str:
    """A distributed run: where its ranks differ, as the terminal shows it, and the order each group of ranks ran its
    compiled graphs in (where torch recorded it)."""
    if not rep.ranks:
        return ""
    from tcinspect.render.ranks import DIVERGENCE_GROUPS, DIVERGENCE_ROWS, ranks_short

    rows = "".join(
        f"<tr><td>{esc(d.compile_id or 'run') if i == 0 else ''}<td>{esc(d.aspect) if i == 0 else ''}"
        f"<td>{esc(ranks_short(g.ranks))}<td>{esc(g.value)}"
        for d in rep.divergence[:DIVERGENCE_ROWS] for i, g in enumerate(d.groups[:DIVERGENCE_GROUPS]))
    more = len(rep.divergence) - DIVERGENCE_ROWS
    divergence = (f"<table><thead><tr><th>compile<th>what<th>ranks<th>had</thead><tbody>{rows}</tbody></table>"
                  + (f'<p class="note">… {more} more divergences (YAML/JSON have every one).</p>' if more > 0 else "")
                  if rows else '<p class="meta">none: every rank compiled the same</p>')
    orders: dict[tuple[str, ...], list[int]] = {}
    for r in rep.ranks:
        if r.graph_execution_order:
            orders.setdefault(r.graph_execution_order, []).append(r.rank)
    order = "".join(f"<tr><td>{esc(ranks_short(ranks))}<td class=num>{len(o)}<td>{esc(' '.join(o))}"
                    for o, ranks in orders.items())
    order_table = ("<h3>Graph execution order</h3><p class=\"meta\">each compiled graph a rank ran, in order, by "
                   "compile id (torch's <code>graph_execution</code> record)</p><table><thead><tr><th>ranks<th>runs"
                   f"<th>compiled graphs run</thead><tbody>{order}</tbody></table>" if order else "")
    from tcinspect.derived.runs import mixed_runs_text

    mixed = f'<p class="note">{esc(mixed_runs_text(rep.mixed_runs))}</p>' if rep.mixed_runs else ""
    return (f'<section id="ranks"><h2>Ranks · {len(rep.ranks)}</h2>{mixed}<h3>Divergence</h3>{divergence}'
            f"{order_table}</section>")
