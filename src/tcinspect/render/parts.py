"""Building blocks shared by the terminal renderers: node tables, code panels, clipped cells. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, TypeVar

from rich.panel import Panel
from rich.table import Table

from tcinspect.report import Graph

_T = TypeVar("_T")


def _shape(dtype: str, shape: Sequence[str]) -> str:
    if not dtype:
        return ""
    return f"{dtype}[{', '.join(shape)}]" if dtype != "sym" else "sym"


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _limited(rows: Sequence[_T], limit: Optional[int], table: Table) -> Sequence[_T]:
    """The first ``limit`` rows (all when None); the table's caption says how many were left out."""
    if limit is None or len(rows) <= limit:
        return rows
    table.caption = f"… {len(rows) - limit:,} more rows (use --all or --format yaml)"
    table.caption_justify = "left"
    return rows[:limit]


def node_table(graph: Graph, title: str, limit: Optional[int] = None) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", pad_edge=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("op")
    table.add_column("name", style="cyan")
    table.add_column("target")
    table.add_column("args", style="dim")
    table.add_column("tensor", no_wrap=True)
    table.add_column("source", style="dim")
    saved = set(graph.saved_for_backward)
    for i, n in enumerate(_limited(graph.nodes, limit, table)):
        name = n.name + (" ★" if n.name in saved else "")
        src = f"{n.source.short()}" if n.source else ""
        table.add_row(str(i), n.op, name, _clip(n.target, 40), _clip(n.args, 40), _shape(n.dtype, n.shape), src)
    return table


def code_panel(code: str, title: str, language: str = "python") -> Panel:
    from rich.syntax import Syntax  # pulls in pygments: only when code is shown

    return Panel(Syntax(code.rstrip("\n"), language, line_numbers=False, word_wrap=True), title=title, title_align="left")
