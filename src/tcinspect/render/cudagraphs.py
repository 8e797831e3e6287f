"""Report -> the CUDA graphs view (``trace --stage cudagraphs``). Pure: never prints, never imports torch."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tcinspect.report import CudaGraphs, Report

_STATUS_STYLE = {"recorded": "green", "skipped": "bold red", "not recorded": "yellow"}


def summary_line(cg: CudaGraphs) -> str:
    """One line: graphs recorded, skipped, never recorded; recordings and re-recordings."""
    counts = {s: sum(1 for g in cg.graphs if g.status == s) for s in ("recorded", "skipped", "not recorded")}
    return (f"{counts['recorded']} recorded / {counts['skipped']} skipped / {counts['not recorded']} not recorded; "
            f"{cg.recordings} recording{'' if cg.recordings == 1 else 's'}, {cg.rerecordings} re-recording"
            f"{'' if cg.rerecordings == 1 else 's'}")


def cudagraphs(rep: Report) -> RenderableType:
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
            table.add_row(*row, *([", ".join(g.user_lines)] if lines else []))
        parts.append(table)
        if any(g.rerecordings for g in cg.graphs):
            parts.append(Text("A graph recorded more than once was re-recorded: a new size of a dynamic shape, or an "
                              "input whose address changed (torch records one CUDA graph per such case).",
                              style="dim"))
        if any(g.status == "not recorded" for g in cg.graphs):
            parts.append(Text("not recorded: torch logged neither a recording nor a skip for it (a graph is "
                              "recorded on its second call; the first is a warm-up).", style="dim"))
    else:
        parts.append(Text("CUDA graphs: nothing recorded or skipped", style="bold"))
    for note in cg.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    return Group(*parts)
