"""Report -> the findings block every command opens with: the verdict, then what needs action, costliest first.

Pure: never prints, never imports torch. Each finding takes one or two lines at 120 columns: what happened (torch's
own words quoted as torch's), its cost and the user's line; then the fix and the command that shows the detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis import findings as analysis
from tcinspect.analysis.findings import Finding
from tcinspect.render.grid import Table
from tcinspect.report import Report

#: Characters of torch's words and of a fix a finding quotes (the detail command shows them whole).
QUOTE = 100
FIX = 250

_STYLE = {"failure": "bold red", "ranks": "bold red", "eager": "bold red", "graph_break": "bold yellow",
          "recompile": "bold yellow", "cudagraph_skip": "bold yellow", "cache": "bold", "guard_overhead": "bold",
          "memory": "bold"}


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def line(f: Finding) -> Text:
    """One finding: ``what (torch: "…") — cost · at file:line `code```, then its fix and where the detail is."""
    t = Text()
    t.append(f.what, style=_STYLE.get(f.kind, "bold"))
    if f.torch_says:
        t.append(" (torch: ", style="dim")
        t.append(f"\"{_clip(f.torch_says, QUOTE)}\"", style="dim italic")
        t.append(")", style="dim")
    if f.cost:
        t.append(f" — {f.cost}")
    if f.where:
        t.append(" · at ")
        t.append(f.where, style="cyan")
    t.append("\n")
    if f.fix:
        t.append("torch's hint: " if f.fix_from == "torch" else "fix: ", style="bold green")
        t.append(_clip(f.fix, FIX))
    if f.detail:
        t.append(f"{'  ' if f.fix else ''}→ {f.detail}", style="dim")
    return t


def your_code(user_code: str, all_rows: bool = False) -> Text:
    """A "your code" cell: the user's line (file:line, then the code), never one of torch's own frames, which reads
    "torch internal" (the frame shown with --all); a note of torch's instead of a frame ("unknown source …, please
    file a bug", torch asking its users) reads "torch's note" (quoted with --all)."""
    yc = analysis.your_code(user_code)
    if yc.code:
        where = yc.where.split(" in ")[0].rsplit("/", 1)[-1]
        return Text.assemble((f"{where}  " if where else "", "dim"), yc.code)
    if not yc.torch_text:  # the user's frame without its line's text, or nothing recorded
        return Text(yc.where.split(" in ")[0].rsplit("/", 1)[-1] if yc.where else "")
    if yc.where:  # one of torch's own frames
        return Text("torch internal" + (f": {yc.torch_text}" if all_rows else ""), style="dim italic")
    return Text("torch's note" + (f": \"{yc.torch_text}\"" if all_rows else ""), style="dim italic")


#: Where the findings a block leaves out are, unless a command says otherwise.
MORE = "the commands named show each kind in full"


def block(rep: Report, items: Optional[Sequence[Finding]] = None, limit: int = analysis.SHOWN,
          more: str = MORE) -> RenderableType:
    """The verdict and the first ``limit`` findings (``items``: the report's own unless given)."""
    found = analysis.findings(rep) if items is None else tuple(items)
    head = Text()
    head.append("Findings", style="bold magenta")
    head.append(f"  {analysis.verdict(rep)}", style="bold" if found else "bold green")
    parts: list[RenderableType] = [head]
    if not found:
        parts.append(Text("   nothing needs action", style="green"))
        return Group(*parts)
    rows = Table.grid(padding=(0, 1))  # a wrapped line stays under its finding's text
    rows.add_column(justify="right", style="bold")
    rows.add_column()
    for n, f in enumerate(found[:limit], 1):
        rows.add_row(f"{n}.", line(f))
    parts.append(rows)
    if len(found) > limit:
        parts.append(Text(f"   + {len(found) - limit} more ({more})", style="dim"))
    return Group(*parts)
