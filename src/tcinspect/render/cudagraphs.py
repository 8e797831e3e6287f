"""Report -> the CUDA graphs view (``trace --stage cudagraphs``). Pure: never prints, never imports torch."""

from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import cudagraphs as analysis
from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.report import CudaGraphPartition, CudaGraphs, Report

_STATUS_STYLE = {"recorded": "green", "skipped": "bold red", "not recorded": "yellow"}


def summary_line(cg: CudaGraphs) -> str:
    """One line: graphs recorded, skipped, never recorded; partitions; recordings and re-recordings; the kernels
    inside CUDA graphs."""
    counts = {s: sum(1 for g in cg.graphs if g.status == s) for s in ("recorded", "skipped", "not recorded")}
    line = f"{counts['recorded']} recorded / {counts['skipped']} skipped / {counts['not recorded']} not recorded"
    if cg.partitions:
        captured = sum(1 for g in cg.graphs for p in g.partitions if p.cudagraphable and p.recordings)
        line += f"; {cg.partitions} partition{'' if cg.partitions == 1 else 's'} / {captured} captured"
    line += (f"; {cg.recordings} recording{'' if cg.recordings == 1 else 's'}, {cg.rerecordings} re-recording"
             f"{'' if cg.rerecordings == 1 else 's'}")
    share = analysis.kernel_share(cg)
    if share is not None:
        line += f"; {cg.kernels_in_cudagraphs} of {cg.kernels} kernels in CUDA graphs ({100 * share:.0f}%)"
    return line


def short(line: str) -> str:
    """"file.py:12" of a "/path/to/file.py:12"."""
    return line.rsplit("/", 1)[-1]


def partition_words(p: CudaGraphPartition) -> tuple[str, str]:
    """A partition's kind ("partition_0 captured", "partition_1 not recorded", "eager island") and why: the causes
    of its re-recordings, or torch's reasons for an island."""
    if p.cudagraphable:
        kind = f"{p.function} captured" if p.recordings else f"{p.function} not recorded"
        return kind, "; ".join(dict.fromkeys(f"re-recorded: {r.cause}" for r in p.recordings if r.cause))
    return "eager island", ", ".join(p.reasons)


def island_line(i: analysis.Island) -> str:
    """One eager island in words: where, why (torch's reasons), at which user lines, what it runs."""
    p = i.partition
    why = ", ".join(p.reasons) or "reason not logged"
    at = f" at {', '.join(short(x) for x in p.user_lines)}" if p.user_lines else ""
    cost = f"{p.kernels} kernel{'' if p.kernels == 1 else 's'}" + (f", {i.time_us:,.1f} us" if i.time_us is not None
                                                                    else "")
    return f"{i.name}: {why}{at} ({cost} outside CUDA graphs)"


def cudagraphs(rep: Report, limit: Optional[int] = None) -> RenderableType:
    cg = rep.cudagraphs
    if cg is None:
        return Text("CUDA graphs: off (compile with --mode reduce-overhead to use them)", style="dim")
    parts: list[RenderableType] = []
    if cg.graphs:
        table = Table(title=f"CUDA graphs · {summary_line(cg)}", title_justify="left")
        table.add_column("compile")
        table.add_column("graph")
        table.add_column("status")
        table.add_column("recordings", justify="right")
        table.add_column("record ms", justify="right")
        table.add_column("on calls")
        table.add_column("reason (torch's words)", overflow="fold")
        lines = any(g.user_lines for g in cg.graphs)
        if lines:
            table.add_column("where")
        for g in cg.graphs:
            calls = ", ".join(dict.fromkeys(str(r.call) for r in g.recordings if r.call >= 0))
            row: list[str | Text] = [g.compile_id or "?", g.part or "?", Text(g.status, style=_STATUS_STYLE.get(g.status, "")),
                   str(len(g.recordings)), f"{1000 * sum(r.record_time_s for r in g.recordings):.1f}" if g.recordings
                   else "", calls, g.reason]
            table.add_row(*row, *([", ".join(short(x) for x in g.user_lines)] if lines else []))
        parts.append(table)
        if any(g.rerecordings for g in cg.graphs if not g.partitions):
            parts.append(Text("A graph recorded more than once was re-recorded: a new size of a dynamic shape, or an "
                              "input whose address changed (torch records one CUDA graph per such case).",
                              style="dim"))
        parts.extend(_partitions(rep))
        if any(g.status == "not recorded" for g in cg.graphs):
            parts.append(Text("not recorded: torch logged neither a recording nor a skip for it (a graph is "
                              "recorded on its second call; the first is a warm-up).", style="dim"))
    else:
        parts.append(Text("CUDA graphs: nothing recorded or skipped", style="bold"))
    for note in cg.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    return Group(*parts)


def _partitions(rep: Report) -> list[RenderableType]:
    """Each partitioned graph's partitions (captured or not, torch's reason, the user line, kernels, recordings),
    then the eager islands costliest first and the share of the kernels (and of --bench's GPU time) inside."""
    cg = rep.cudagraphs
    if cg is None or not cg.partitions:
        return []
    table = Table(title="Graph partitions (Inductor's graph_partition: each cudagraphable one is its own CUDA graph)",
                  title_justify="left")
    for col, justify in (("compile", "left"), ("graph", "left"), ("#", "right"), ("partition", "left"),
                         ("kernels", "right"), ("recordings", "right"), ("why (torch's words)", "left"),
                         ("where", "left")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for g in cg.graphs:
        for p in g.partitions:
            kind, why = partition_words(p)
            style = ("green" if p.recordings else "yellow") if p.cudagraphable else "bold red"
            if not why and not p.cudagraphable and g.partitions_from == "output code":
                why = "not logged (read from the output code)"
            table.add_row(g.compile_id, g.part, str(p.index), Text(kind, style=style), str(p.kernels),
                          str(len(p.recordings)) if p.cudagraphable else "", why,
                          ", ".join(short(x) for x in p.user_lines))
    out: list[RenderableType] = [table]
    found = analysis.islands(rep)
    if found:
        out.append(Text("eager islands, costliest first:", style="bold"))
        out.extend(Text(f"  {island_line(i)}") for i in found)
    share = analysis.kernel_share(cg)
    if share is not None:
        line = f"inside CUDA graphs: {cg.kernels_in_cudagraphs} of {cg.kernels} kernels ({100 * share:.0f}%)"
        timed = analysis.time_share(rep)
        if timed is not None:
            line += f", {timed[0]:,.1f} of {timed[1]:,.1f} us of measured GPU time ({100 * timed[0] / timed[1]:.0f}%)"
        out.append(Text(line, style="bold"))
    return out


def section_html(rep: Report) -> str:
    """Each compiled graph under CUDA graphs: recorded, skipped (torch's reason) or not recorded."""
    cg = rep.cudagraphs
    if cg is None:
        return ""
    from tcinspect.render.cudagraphs import summary_line

    rows = "".join(
        f"<tr><td>{esc(g.compile_id or '?')}</td><td>{esc(g.part or '?')}</td><td>{esc(g.status)}</td>"
        f"<td>{len(g.recordings)}</td><td>{esc(', '.join(str(r.call) for r in g.recordings))}</td>"
        f"<td>{esc(g.reason)}</td><td>{esc(', '.join(g.user_lines))}</td></tr>" for g in cg.graphs)
    table = ("<table><thead><tr><th>compile</th><th>graph</th><th>status</th><th>recordings</th><th>on calls</th>"
             f"<th>reason (torch's words)</th><th>where</th></tr></thead><tbody>{rows}</tbody></table>" if rows else "")
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in cg.notes)
    return (f'<section id="cudagraphs"><h2>CUDA graphs</h2><p class="meta">{esc(summary_line(cg))}</p>'
            f"{table}{_partitions_html(rep)}{notes}</section>")


def _partitions_html(rep: Report) -> str:
    """Each partition of the partitioned graphs, captured or an eager island (torch's reason, the user line), then
    the islands costliest first."""
    from tcinspect.analysis.cudagraphs import islands
    from tcinspect.render.cudagraphs import island_line, short

    cg = rep.cudagraphs
    if cg is None or not cg.partitions:
        return ""
    rows = []
    for g in cg.graphs:
        for p in g.partitions:
            kind, why = partition_words(p)
            rows.append(f"<tr><td>{esc(g.compile_id)}</td><td>{esc(g.part)}</td><td class=num>{p.index}</td>"
                        f"<td>{esc(kind)}</td><td class=num>{p.kernels}</td><td class=num>"
                        f"{len(p.recordings) if p.cudagraphable else ''}</td><td>{esc(why)}</td>"
                        f"<td>{esc(', '.join(short(x) for x in p.user_lines))}</td></tr>")
    found = "".join(f"<li>{esc(island_line(i))}</li>" for i in islands(rep))
    return ("<h3>Graph partitions</h3><table><thead><tr><th>compile</th><th>graph</th><th>#</th><th>partition</th>"
            "<th>kernels</th><th>recordings</th><th>why (torch's words)</th><th>where</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>" + (f"<p>eager islands, costliest first:</p><ul>{found}</ul>"
                                                          if found else ""))
