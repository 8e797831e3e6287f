"""Report -> the collectives each compiled graph runs (``trace --stage collectives``). Pure: no torch, no printing."""

from __future__ import annotations

from typing import Optional

from rich.console import RenderableType
from rich.text import Text

from tcinspect.derived.collectives import of_stages
from tcinspect.render.bench import size
from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.report import Report


def shown(rep: Report) -> bool:
    """Whether `trace` shows the collectives unasked: where the compiled graphs run any."""
    return bool(of_stages(rep.stages))


def collectives(rep: Report, limit: Optional[int] = None) -> RenderableType:
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


def section_html(rep: Report) -> str:
    """The collectives each compiled graph runs, in order (``trace --stage collectives``); none: no section."""
    from tcinspect.derived.collectives import of_stages
    from tcinspect.render.bench import size

    cols = of_stages(rep.stages)
    if not cols:
        return ""
    rows = "".join(
        f"<tr><td>{esc(c.compile_id)}<td>{esc(c.part)}<td class=num>{c.index}<td>{esc(c.kind)}<td>{esc(c.group or '?')}"
        f"<td>{esc(c.tensor)}<td class=num>{size(c.nbytes) if c.nbytes is not None else '?'}"
        f"<td>{esc(c.node)}" for c in cols)
    return (f'<section id="collectives"><h2>Collectives · {len(cols)}</h2><p class="meta">in the compiled graphs, '
            "in the order each graph runs them</p><table><thead><tr><th>compile<th>graph<th>#<th>collective<th>group"
            f"<th>tensor<th>size<th>node</thead><tbody>{rows}</tbody></table></section>")
