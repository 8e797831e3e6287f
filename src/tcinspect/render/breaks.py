"""Report -> the `breaks` view: distinct graph breaks, their source and a suggested fix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from tcinspect.analysis import coverage
from tcinspect.analysis.breaks import BreakCost, break_costs, fullgraph_ok, ops_per_graph
from tcinspect.analysis.fixes import FixTrial, fix_status
from tcinspect.render.grid import Table
from tcinspect.render.parts import library_path, plural
from tcinspect.render.table import backend_failures_table
from tcinspect.report import Report


def summary_line(rep: Report, fullgraph: bool = False) -> Text:
    s = rep.summary
    failed = [bool(g.backend_error) for g in rep.stages.dynamo.graphs]
    ops = ", ".join(f"{n} (failed)" if f else str(n) for n, f in zip(ops_per_graph(rep), failed)) or "-"
    line = Text()
    line.append(plural(s.graphs, "graph"), style="bold")
    if s.graphs_failed:
        line.append(f" (+ {s.graphs_failed} the backend failed on, run eagerly)", style="bold red")
    line.append(" · ")
    line.append(f"{plural(s.graph_breaks, 'graph break')} ({s.distinct_graph_breaks} distinct)",
                style="bold red" if s.graph_breaks else "bold green")
    line.append(f" · ops per graph: {ops}")
    if rep.coverage is not None:
        line.append("\n")
        line.append(coverage.headline(rep.coverage), style="bold red" if rep.coverage.fallbacks_to_eager else "")
    if fullgraph:
        ok = fullgraph_ok(rep)
        line.append(" · fullgraph=True: ")
        line.append("compiles" if ok else "fails (graph breaks below)", style="green" if ok else "bold red")
    return line


def source_context(context: tuple[tuple[int, str], ...], line: int) -> Text:
    out = Text()
    for n, text in context:
        mark = "➤" if n == line else " "
        out.append(f"{mark} {n:>5} │ {text}\n", style="bold yellow" if n == line else "dim")
    return out


def cost_cell(cost: BreakCost) -> Text:
    """What a break costs, in a table cell: its frame run eagerly, the measured call's eager ops there."""
    out = Text()
    if cost.frame_ran_eagerly:
        out.append("frame ran eagerly", style="bold red")
    if cost.eager_ops is not None:
        out.append(("\n" if out else "") + f"{cost.eager_ops} eager op{'s' if cost.eager_ops != 1 else ''}")
    elif not cost.frame_ran_eagerly:
        out.append("not measured", style="dim")
    if not cost.frame_ran_eagerly:  # the calls captured in the graph it ended, and in the one after it
        after = "?" if cost.calls_after is None else str(cost.calls_after)
        out.append(f"\ncalls {cost.calls_before} | {after}", style="dim")
    return out


def eager_frames_table(rep: Report) -> Table:
    """Frames Dynamo gave up on, which ran eagerly: where, where torch gave up, torch's reason."""
    table = Table(title="Ran eagerly (fallbacks to eager)", title_justify="left", header_style="bold")
    table.add_column("compile id", style="dim")
    table.add_column("frame", style="cyan")
    table.add_column("torch gave up at", style="yellow")
    table.add_column("torch's reason")
    for f in coverage.eager_frames(rep):
        given_up = f"{f.user_frame.short()}  {f.user_frame.code}".rstrip() if f.user_frame else "?"
        table.add_row(f.compile_id, f"{f.function} ({f.file.rsplit('/', 1)[-1]}:{f.line})", given_up,
                      f"{f.fail_type}: {f.reason}" if f.reason else f.fail_type)
    return table


def breaks(rep: Report, fullgraph: bool = False, trials: Optional[Sequence[FixTrial]] = None) -> RenderableType:
    parts: list[RenderableType] = [summary_line(rep, fullgraph)]
    ranked = break_costs(rep)
    groups = [d for d, _ in ranked]
    frames = coverage.frames_by_id(rep)
    failures = [backend_failures_table(rep)] if rep.stages.dynamo.backend_failures else []
    if coverage.eager_frames(rep):
        parts.append(eager_frames_table(rep))
    if not groups:
        parts.append(Text("No graph breaks: Dynamo captured each compiled frame as one graph.", style="green"))
        return Group(*parts, *failures)
    table = Table(header_style="bold")
    table.add_column("#", justify="right", style="dim")
    # file:line whole, never cut (a library file's name is long; its line number is the point)
    widest = max((len(d.first.user_frame.short()) for d in groups if d.first.user_frame), default=1)
    table.add_column("where", style="cyan", no_wrap=True, min_width=min(widest, 40))
    table.add_column("function")
    table.add_column("break type")
    table.add_column("count", justify="right")
    table.add_column("cost")
    table.add_column("compile ids", style="dim")
    for i, (d, cost) in enumerate(ranked, 1):
        loc = d.first.user_frame
        kind = d.first.break_type + (f" ({d.first.gb_id})" if d.first.gb_id else "")
        cell = Text(loc.short() if loc else "?")
        if d.first.model_frame is not None:
            cell.append(f"\n↳ from {d.first.model_frame.short()}", style="dim")
        table.add_row(str(i), cell, loc.function if loc else "", kind, str(d.count), cost_cell(cost),
                      ", ".join(d.compile_ids))
    parts.append(table)
    for i, d in enumerate(groups, 1):
        b = d.first
        body = Text()
        if b.reason:
            body.append(f"{b.reason}\n", style="dim")
        if b.explanation:
            body.append("Why: ", style="bold")
            body.append(f"{b.explanation}\n")
        for h in b.hints:
            body.append("PyTorch hint: ", style="bold")
            body.append(f"{h}\n", style="dim")
        if b.fix:
            body.append("Suggested fix: ", style="bold green")
            body.append(f"{b.fix}\n")
            body.append(f"({fix_status(b, trials, frames.get(b.compile_id))})\n", style="dim")
        if b.model_frame is not None:
            m = b.model_frame
            body.append("Reached from your code: ", style="bold")
            body.append(f"{m.file}:{m.line} in {m.function}" + (f"  {m.code}" if m.code else "") + "\n")
        if b.context and b.user_frame is not None:
            body.append("\n")
            body.append_text(source_context(b.context, b.user_frame.line))
        # the place first, short, so a narrow terminal cuts the break type rather than the path
        place = f"{library_path(b.user_frame.file)}:{b.user_frame.line}" if b.user_frame else "?"
        if b.user_frame is not None and library_path(b.user_frame.file) != b.user_frame.file:
            body = Text(f"at {b.user_frame.file}:{b.user_frame.line}\n", style="dim") + body
        parts.append(Panel(body, title=f"{i}. {place} — {b.break_type}", title_align="left"))
    return Group(*parts, *failures)
