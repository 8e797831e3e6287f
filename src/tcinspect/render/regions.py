"""The `regions` stage: each region's calls and reuse, as a Rich renderable. Pure."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tcinspect.analysis.regions import verdict
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


def regions(rep: Report) -> RenderableType:
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
