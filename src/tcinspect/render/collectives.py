"""Report -> the collectives each compiled graph runs (``trace --stage collectives``). Pure: no torch, no printing."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from tcinspect.derived.collectives import of_stages
from tcinspect.render.bench import size
from tcinspect.report import Report


def collectives(rep: Report) -> RenderableType:
    cols = of_stages(rep.stages)
    if not cols:
        return Text("Collectives: none in the compiled graphs", style="dim")
    table = Table(title=f"Collectives · {len(cols)} in the compiled graphs, in the order each graph runs them",
                  title_justify="left")
    for name, justify in (("compile", "left"), ("graph", "left"), ("#", "right"), ("collective", "left"),
                          ("group", "left"), ("tensor", "left"), ("size", "right"), ("node", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in cols:
        table.add_row(c.compile_id, c.part, str(c.index), c.kind, c.group or "?",
                      c.tensor, size(c.nbytes) if c.nbytes is not None else "?", c.node)
    return table
