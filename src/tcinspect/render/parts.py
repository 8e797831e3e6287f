"""Building blocks shared by the terminal renderers: node tables, code panels, clipped cells. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, TypeVar

from rich.panel import Panel

from tcinspect.render.grid import Table
from tcinspect.report import Graph

_T = TypeVar("_T")


def _shape(dtype: str, shape: Sequence[str]) -> str:
    if not dtype:
        return ""
    return f"{dtype}[{', '.join(shape)}]" if dtype != "sym" else "sym"


def plural(n: int, word: str, many: str = "") -> str:
    """``1 graph``, ``2 graphs`` (``many``: an irregular plural)."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {many or word + 's'}"


def library_path(file: str) -> str:
    """A file as its package path (``transformers/models/bert/modeling_bert.py``) when it is installed
    code, else as given."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in file:
            return file.rsplit(marker, 1)[1]
    return file


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
    rows = list(enumerate(graph.nodes))
    inputs = [(i, n) for i, n in rows if n.op in _INPUT_OPS]
    if limit is not None and len(rows) > limit and len(inputs) > PLACEHOLDER_ROWS:
        # a real model's graph opens with dozens of placeholders (every parameter and buffer): one row for
        # them, so the rows shown are the ops
        first, last = inputs[0][0], inputs[-1][0]
        ops = sorted({n.op for _, n in inputs})
        table.add_row(f"{first}–{last}" if last != first else str(first), " / ".join(ops),
                      plural(len(inputs), "input"), "", _clip(", ".join(n.name for _, n in inputs[:3]) + ", …", 40),
                      "", "(--all lists them)")
        rows = [(i, n) for i, n in rows if n.op not in _INPUT_OPS]
    for i, n in _limited(rows, limit, table):
        name = n.name + (" ★" if n.name in saved else "")
        src = f"{n.source.short()}" if n.source else ""
        table.add_row(str(i), n.op, name, _clip(n.target, 40), _clip(n.args, 40), _shape(n.dtype, n.shape), src)
    return table


#: Graph inputs: summarised in one row when a limited table would otherwise be mostly these.
_INPUT_OPS = ("placeholder", "get_attr")
#: More inputs than this, in a table cut to its row limit, are summarised in one row.
PLACEHOLDER_ROWS = 8


def code_panel(code: str, title: str, language: str = "python") -> Panel:
    from rich.syntax import Syntax  # pulls in pygments: only when code is shown

    return Panel(Syntax(code.rstrip("\n"), language, line_numbers=False, word_wrap=True), title=title, title_align="left")
