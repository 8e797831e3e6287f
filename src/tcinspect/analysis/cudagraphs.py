"""How much of a step runs inside CUDA graphs, and the eager islands between partitions (pure; no torch).

From the CUDA graph section (parse/cudagraphs.py): a kernel runs inside a CUDA graph when it is in a cudagraphable
partition of a graph CUDA graphs recorded (or anywhere in a recorded graph Inductor did not partition). With
``codegen --bench``, the same split of the kernels' measured GPU time. Nothing here estimates a figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcinspect.report import CudaGraphPartition, CudaGraphs, CudaGraphUse, Report


@dataclass(frozen=True)
class Island:
    """A partition torch could not CUDA-graph, run eagerly between (or instead of) CUDA graphs."""

    compile_id: str
    part: str
    partition: CudaGraphPartition
    #: its kernels' measured GPU time (``codegen --bench``), microseconds; None where not measured
    time_us: Optional[float] = None

    @property
    def name(self) -> str:
        return f"{self.compile_id} {self.part} partition {self.partition.index}"


def kernel_share(cg: Optional[CudaGraphs]) -> Optional[float]:
    """The share of the compiled graphs' kernels that run inside CUDA graphs; None where there are no kernels."""
    if cg is None or not cg.kernels:
        return None
    return cg.kernels_in_cudagraphs / cg.kernels


def _times(rep: Report) -> dict[tuple[str, str, int], float]:
    """Each benchmarked kernel's GPU time (``codegen --bench``), by (compile id, graph, index in its output code)."""
    if rep.bench is None:
        return {}
    return {(t.compile_id, t.part, t.index): t.median_us for t in rep.bench.kernels if t.runs}


def time_share(rep: Report) -> Optional[tuple[float, float]]:
    """(GPU time inside CUDA graphs, all of it), in microseconds, of the benchmarked kernels; None without --bench."""
    times = _times(rep)
    cg = rep.cudagraphs
    if not times or cg is None:
        return None
    inside = total = 0.0
    for g in cg.graphs:
        mine = {i: t for (cid, part, i), t in times.items() if (cid, part) == (g.compile_id, g.part)}
        total += sum(mine.values())
        if g.status != "recorded":
            continue
        if not g.partitions:
            inside += sum(mine.values())
        else:
            inside += sum(mine.get(i, 0.0) for p in g.partitions if p.cudagraphable for i in p.kernel_indices)
    return (inside, total) if total else None


def islands(rep: Report) -> list[Island]:
    """Every partition that runs outside CUDA graphs, costliest first: by measured GPU time where --bench timed its
    kernels, else by its kernels, then its ops; a graph's order breaks ties."""
    cg = rep.cudagraphs
    if cg is None:
        return []
    times = _times(rep)
    out: list[Island] = []
    for g in cg.graphs:
        for p in g.partitions:
            if p.cudagraphable:
                continue
            spent = [times[(g.compile_id, g.part, i)] for i in p.kernel_indices if (g.compile_id, g.part, i) in times]
            out.append(Island(g.compile_id, g.part, p, sum(spent) if spent else None))
    order = {id(i): n for n, i in enumerate(out)}
    return sorted(out, key=lambda i: (-(i.time_us or 0.0), -i.partition.kernels, -len(i.partition.ops), order[id(i)]))


def partition_counts(g: CudaGraphUse) -> str:
    """"3 partitions, 2 cudagraphable" for a partitioned graph; "" for one Inductor did not partition."""
    if not g.partitions:
        return ""
    n = sum(1 for p in g.partitions if p.cudagraphable)
    return f"{len(g.partitions)} partition{'' if len(g.partitions) == 1 else 's'}, {n} cudagraphable"


def skips(rep: Report) -> Optional[int]:
    """``check --max-cudagraph-skips``: the skips torch logged, and the graphs nothing was captured for that it logged
    none for (no cudagraphable partition); None with CUDA graphs off."""
    cg = rep.cudagraphs
    return cg.skips + cg.unlogged_skips if cg is not None else None


def recordings(rep: Report) -> Optional[int]:
    """``check --max-cudagraph-recordings``: every CUDA graph recorded, re-recordings included; None with them off."""
    return rep.cudagraphs.recordings if rep.cudagraphs is not None else None
