"""A report diff -> Rich tables. Pure."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis.diff import Diff
from tcinspect.render.grid import Table

_STYLE = {"added": "red", "removed": "green", "changed": "yellow"}


def diff(d: Diff, a: str, b: str) -> RenderableType:
    if d.empty:
        return Text(f"{a} and {b}: no differences in graphs, breaks, recompiles or kernels", style="green")
    parts: list[RenderableType] = [Text(f"{a} → {b}", style="bold")]
    if d.counts:
        t = Table(title="Counts", title_justify="left", header_style="bold")
        for col in ("count", "before", "after", "change"):
            t.add_column(col, justify="right" if col != "count" else "left")
        for name, x, y in d.counts:
            t.add_row(name, str(x), str(y), Text(f"{y - x:+d}", style="red" if y > x else "green"))
        parts.append(t)
    for title, rows in (("Graphs", d.graphs), ("Kernels", d.kernels)):
        if rows:
            t = Table(title=title, title_justify="left", header_style="bold")
            t.add_column("change")
            for _ in rows[0][1:]:
                t.add_column("")
            for change, *rest in rows:
                t.add_row(Text(change, style=_STYLE.get(change, "")), *rest)
            parts.append(t)
    for title, pairs in (("Graph breaks", d.breaks), ("Recompile reasons", d.recompiles)):
        if pairs:
            t = Table(title=title, title_justify="left", header_style="bold")
            t.add_column("change")
            t.add_column("")
            for change, text in pairs:
                t.add_row(Text(change, style=_STYLE.get(change, "")), text)
            parts.append(t)
    if d.caches:
        parts.append(Text("Compile caches (look-ups whose state or key changed)", style="bold"))
        parts.extend(Text(f"  {line}", style="yellow") for line in d.caches)
    return Group(*parts)
