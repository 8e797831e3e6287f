"""The `regions` stage: each region's calls and reuse, as a Rich renderable. Pure."""

from __future__ import annotations

from typing import Optional

from rich.console import Group, RenderableType
from rich.text import Text

from tcinspect.analysis.regions import verdict
from tcinspect.render.grid import Table
from tcinspect.render.htmlparts import esc
from tcinspect.report import Region, Report


def _region_table(region: Region) -> Table:
    title = f"{region.kind} {region.function} ({region.where}) · {', '.join(region.compile_ids)}"
    table = Table(title=title, title_justify="left")
    for col in ("#", "subgraph", "reused", "block", "call", "inputs / what differed"):
        table.add_column(col, overflow="fold")
    for i, c in enumerate(region.region_calls):
        detail = "\n".join(c.differed or (() if c.reused else c.inputs)) or (
            f"reuses {c.subgraph}" if c.reused else "first compile")
        table.add_row(str(i), c.subgraph, "yes" if c.reused else "no", c.module or "?", c.user_line, detail)
    return table


def regions(rep: Report, limit: Optional[int] = None) -> RenderableType:
    if rep.regions is None:
        return Text("Regions: none (no nested_compile_region and no block compiled on its own)", style="dim")
    parts: list[RenderableType] = [Text("Regions", style="bold")]
    for r in rep.regions.regions:
        parts.append(_region_table(r))
        parts.append(Text(f"  {verdict(r)}", style="bold"))
        extra = []
        if r.compile_time_s >= 0:
            extra.append(f"compile {r.compile_time_s:.2f} s, of which recompiles {r.recompile_time_s:.2f} s")
        extra.append(_kernels(rep, r))
        if r.note:
            extra.append(r.note)
        parts.append(Text("  " + " · ".join(extra), style="dim"))
    return Group(*parts)


def _kernels(rep: Report, region: Region) -> str:
    if region.kernels >= 0:
        return f"kernels {region.kernels}"
    if not rep.stages.inductor.outputs:
        return "kernels: none (Inductor made no output code)"
    return "kernels per region: not stated by Inductor's provenance"


def section_html(rep: Report) -> str:
    """Each compiled region: its calls, which subgraph served each, and what differed where one was not reused."""
    if rep.regions is None:
        return ""
    from tcinspect.analysis.regions import verdict

    parts = [f'<section id="regions"><h2>Regions · {len(rep.regions.regions)}</h2>']
    for r in rep.regions.regions:
        rows = "".join(
            f"<tr><td class=num>{i}<td>{esc(c.subgraph)}<td>{'yes' if c.reused else 'no'}<td>{esc(c.module or '?')}"
            f"<td>{esc(c.user_line)}<td>{'<br>'.join(esc(x) for x in (c.differed or (() if c.reused else c.inputs))) or ('reuses ' + esc(c.subgraph) if c.reused else 'first compile')}"
            for i, c in enumerate(r.region_calls))
        times = (f" · compile {r.compile_time_s:.2f} s, recompiles {r.recompile_time_s:.2f} s"
                 if r.compile_time_s >= 0 else "")
        parts.append(f'<h3 data-key="region">{esc(r.kind)} {esc(r.function)} ({esc(r.where)})</h3>'
                     f'<p class="meta">{esc(verdict(r))}{esc(times)}'
                     f"{' · kernels ' + str(r.kernels) if r.kernels >= 0 else ''} · {esc(r.note)}</p>"
                     "<table><thead><tr><th>#<th>subgraph<th>reused<th>block<th>call<th>inputs / what differed"
                     f"</thead><tbody>{rows}</tbody></table>")
    parts.append("</section>")
    return "".join(parts)
