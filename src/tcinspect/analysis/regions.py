"""Derived views of regional compilation: each region's verdict, the run's reuse. Pure."""

from __future__ import annotations

from typing import Optional

from tcinspect.report import Region, Report

_BLOCK = "compiled_block"


def share(region: Region) -> str:
    """The reuse share as text ("75% reused"), or why it is not known."""
    if region.reuse is None:
        return "reuse share not recorded"
    return f"{100 * region.reuse:.0f}% reused"


def verdict(region: Region) -> str:
    """One line: the region's calls, distinct subgraphs, and which calls did not reuse."""
    missed = [c for c in region.region_calls[1:] if not c.reused]
    if region.kind == _BLOCK:
        if region.distinct == 1:
            return "compiled once (0 recompiles): every later call reused it"
        return (f"compiled {region.distinct} times: {region.distinct - 1} recompile(s), each a call that did not reuse "
                "an earlier compile")
    head = f"{region.calls} calls, {region.distinct} distinct subgraph(s), {share(region)}"
    if not missed:
        return f"{head}: every call after the first reused it"
    who = ", ".join(c.module or c.node for c in missed)
    return f"{head}: traced again for {who}"


def lowest_reuse(rep: Report) -> Optional[float]:
    """The lowest reuse share of the run's regions whose calls torch records; None when there is none."""
    shares = [r.reuse for r in (rep.regions.regions if rep.regions else ()) if r.reuse is not None]
    return min(shares) if shares else None


def summary_line(rep: Report) -> Optional[tuple[str, str]]:
    """The summary's `regions` row: (count, what), or None for a run without regions."""
    if rep.regions is None:
        return None
    regions = rep.regions.regions
    nested = [r for r in regions if r.reuse is not None]
    blocks = [r for r in regions if r.kind == _BLOCK]
    parts = []
    if nested:
        calls = sum(r.calls for r in nested)
        reused = sum(r.reused_calls for r in nested)
        parts.append(f"{calls} calls, {sum(r.distinct for r in nested)} distinct, {reused} reused "
                     f"({100 * reused / calls:.0f}%)")
    if blocks:
        parts.append(f"{len(blocks)} compiled block(s): {sum(r.distinct for r in blocks)} compiles, "
                     f"{sum(r.distinct - 1 for r in blocks)} recompiles")
    return str(len(regions)), "; ".join(parts)
