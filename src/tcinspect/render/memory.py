"""The memory section rendered: a terminal table and the HTML page's section with a per-module bar chart. Pure."""

from __future__ import annotations

import html

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import memory as views
from tcinspect.render.grid import Table
from tcinspect.report import GraphMemory, Memory, MemoryMeasurement, Report

NO_BACKWARD = "no AOT graph has a backward graph: nothing is saved for backward (no memory section)"


def _graph_head(g: GraphMemory, estimates: list[views.Estimate]) -> Text:
    head = Text()
    head.append(f"graph {g.compile_id}  ", style="bold")
    head.append(f"saved for backward {views.human(g.saved_bytes)} ({g.saved_bytes:,} B)", style="bold")
    head.append(f"  activations {views.human(g.bytes_of('activation'))} · parameters "
                f"{views.human(g.bytes_of('parameter'))} · inputs {views.human(g.bytes_of('input'))}", style="dim")
    if g.saved_bytes_expr:
        hints = ", ".join(f"{s}={v}" for s, v in g.hints)
        head.append(f"\n  symbolic: {g.saved_bytes_expr} bytes (at the traced hints {hints})", style="dim")
    if g.recomputed:
        head.append(f"\n  recomputed in backward (not saved): {len(g.recomputed)} nodes, e.g. "
                    f"{', '.join(g.recomputed[:6])}", style="dim")
    if g.memory_budget >= 0:
        head.append(f"\n  activation_memory_budget {g.memory_budget:g} (the partitioner's min_cut_information)",
                    style="dim")
    for e in estimates:
        head.append(f"\n  {views.estimate_line(e)}", style="dim" if e.peak is not None else "yellow")
    if g.note:
        head.append(f"\n  {g.note}", style="yellow")
    return head


def _saved_table(g: GraphMemory, limit: int | None) -> Table:
    t = Table(box=None, padding=(0, 2), title_justify="left")
    lines = any(s.line for s in g.saved)
    t.add_column("tensor", no_wrap=True)
    t.add_column("kind")
    t.add_column("dtype[shape]", no_wrap=True)
    t.add_column("bytes", justify="right", no_wrap=True)
    t.add_column("produced by", no_wrap=True)
    t.add_column("module (parameter)", overflow="fold")
    if lines:
        t.add_column("line", no_wrap=True)
    rows = sorted(g.saved, key=lambda s: (-s.bytes, s.name))
    for s in rows[:limit] if limit else rows:
        size = f"{s.bytes:,}" if s.bytes else f"0 (view of {s.storage})"
        cells = [s.name, s.kind, f"{s.dtype}[{', '.join(s.shape)}]",
                 size + (f" = {s.bytes_expr}" if s.bytes_expr else ""), s.op or "graph input", s.parameter or s.module]
        t.add_row(*cells, *([s.line.rsplit("/", 1)[-1]] if lines else []))
    if limit and len(rows) > limit:
        t.add_row(f"… {len(rows) - limit} more (--all)", *[""] * (6 if lines else 5))
    return t


def _shares(title: str, shares: list[views.Share], limit: int) -> Table:
    t = Table(title=title, box=None, padding=(0, 2), title_justify="left")
    t.add_column("where")
    t.add_column("bytes", justify="right")
    t.add_column("activations", justify="right")
    t.add_column("tensors", justify="right")
    for s in shares[:limit]:
        t.add_row(s.key, f"{s.bytes:,}", f"{s.activation_bytes:,}", str(s.tensors))
    return t


def measured_text(mem: Memory) -> Text:
    m = mem.measured
    out = Text()
    if m is None:
        out.append("Peak memory: ", style="bold")
        out.append(mem.not_measured or "not measured (a trace log or saved report records no measurement)",
                   style="yellow")
        return out
    out.append(f"Peak memory, one training step on {m.device_name}\n", style="bold")
    for label, peak, start, fwd in (("compiled", m.compiled_peak, m.compiled_start, m.compiled_forward_end),
                                    ("eager", m.eager_peak, m.eager_start, m.eager_forward_end)):
        out.append(f"  {label:<9} peak {views.human(peak):>10} ({peak:,} B)  above the step's start "
                   f"{views.human(peak - start)}  alive after forward {views.human(fwd)}\n")
    out.append(f"  compiled / eager (above the start): {m.peak_ratio:.3f}\n")
    if m.cudagraph_pool:
        out.append(f"  CUDA-graph pool {views.human(m.cudagraph_pool)}\n")
    for n in m.notes:
        out.append(f"  {n}\n", style="dim")
    out.append(f"  {m.method}", style="dim")
    return out


def table(rep: Report, limit: int | None = 15) -> RenderableType:
    mem = rep.memory
    if mem is None:
        if any(g.backward is not None for g in rep.stages.aot_autograd.graphs):
            return Text("this report was written before tcinspect recorded memory: trace the model again",
                        style="yellow")
        return Text(NO_BACKWARD, style="dim")
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"Saved for backward {views.human(mem.saved_bytes)} ({mem.saved_bytes:,} B) in "
                f"{len(mem.graphs)} graph(s)", style="bold")
    head.append("  bytes per storage: a saved view of a storage already counted adds 0", style="dim")
    parts.append(head)
    for g in mem.graphs:
        parts += [_graph_head(g, views.estimates(rep, g)), _saved_table(g, limit)]
    parts.append(_shares("By module", views.by_module(mem), limit or 10_000))
    parts.append(_shares("By line", views.by_line(mem), limit or 10_000))
    parts.append(measured_text(mem))
    return Group(*parts)


def _bar_rows(shares: list[views.Share], limit: int = 30) -> str:
    top = max((s.bytes for s in shares), default=0) or 1
    rows = []
    for s in shares[:limit]:
        width = 100.0 * s.bytes / top
        act = 100.0 * s.activation_bytes / top
        rows.append(f'<tr><td class="mono">{html.escape(s.key)}</td><td class="num">{html.escape(views.human(s.bytes))}</td>'
                    f'<td style="width:60%"><div class="membar" style="width:{width:.1f}%">'
                    f'<div class="membar-act" style="width:{(act / width * 100) if width else 0:.1f}%"></div></div></td></tr>')
    return "".join(rows)


def _section_body(rep: Report) -> str:
    """The memory section of the report's page: totals, a bar per module (activations darker), saved tensors."""
    mem = rep.memory
    if mem is None:
        return ""
    out = [f"<p><b>Saved for backward: {html.escape(views.human(mem.saved_bytes))}</b> "
           f"({mem.saved_bytes:,} B, per storage) in {len(mem.graphs)} graph(s).</p>",
           '<style>.membar{background:#9ecae1;height:12px;position:relative}'
           '.membar-act{background:#3182bd;height:12px}</style>',
           "<h3>By module</h3><p>Bar: saved bytes; darker: activations (the rest are parameters and inputs).</p>",
           f'<table class="memchart">{_bar_rows(views.by_module(mem))}</table>']
    for g in mem.graphs:
        out.append(f"<h3>graph {html.escape(g.compile_id)}: {html.escape(views.human(g.saved_bytes))}</h3>")
        out += [f"<p>{html.escape(views.estimate_line(e))}</p>" for e in views.estimates(rep, g)]
        out.append("<table><tr><th>tensor</th><th>kind</th><th>dtype[shape]</th><th>bytes</th><th>op</th>"
                   "<th>module</th><th>line</th></tr>")
        for s in sorted(g.saved, key=lambda s: (-s.bytes, s.name)):
            out.append(f"<tr><td class='mono'>{html.escape(s.name)}</td><td>{s.kind}</td>"
                       f"<td class='mono'>{html.escape(s.dtype)}[{html.escape(', '.join(s.shape))}]</td>"
                       f"<td class='num'>{s.bytes:,}</td><td class='mono'>{html.escape(s.op)}</td>"
                       f"<td class='mono'>{html.escape(s.parameter or s.module)}</td>"
                       f"<td class='mono'>{html.escape(s.line.rsplit('/', 1)[-1])}</td></tr>")
        out.append("</table>")
    out.append(f"<pre>{html.escape(measured_text(mem).plain)}</pre>")
    return "\n".join(out)


def measurement_lines(m: MemoryMeasurement) -> list[str]:
    """One line per measured number (for check's messages)."""
    return [f"compiled peak {m.compiled_peak:,} B", f"eager peak {m.eager_peak:,} B", f"ratio {m.peak_ratio:.3f}"]


def section_html(rep: Report) -> str:
    """Saved-for-backward bytes, a bar per module, and the measured peaks (``tcinspect memory``)."""
    if rep.memory is None:
        return ""
    return f'<section id="memory"><h2>Memory</h2>{_section_body(rep)}</section>'
