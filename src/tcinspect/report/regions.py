"""Regional compilation: each region's calls and reuse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class RegionCall:
    """One call of a compiled region, and whether it reused a subgraph an earlier call compiled."""

    #: nested_compile_region: the invoke_subgraph identifier that ran it ("subgraph_1");
    #: compiled_block: the compile id of the compile it made
    subgraph: str
    compile_id: str  # the compile whose graph holds the call (nested) or that the call made (compiled_block)
    reused: bool = False
    node: str = ""  # the invoke_subgraph node in Dynamo's graph (nested)
    user_line: str = ""  # "file:line" of the call
    module: str = ""  # the block it ran for ("model.layers.1"), read from its parameters' names where it has any
    #: its tensor inputs as the graph prints them, parameters left out: "graph input l_x_ f32[4, 16] (16, 1) cpu"
    inputs: tuple[str, ...] = ()
    #: a call that compiled again: what differed from the subgraph it could have reused (input properties,
    #: the failed guards of a recompile), or what torch leaves unsaid
    differed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Region:
    """A function compiled as a region: its calls, the distinct subgraphs compiled for them, what was reused."""

    kind: str  # nested_compile_region (invoke_subgraph) | compiled_block (a block's forward compiled on its own)
    function: str  # the region's function, e.g. "forward"
    where: str  # "file:line" of the region's first traced line (nested) or its code (compiled_block)
    #: calls torch records: each invoke_subgraph node (nested); -1 for a compiled block, whose calls served from
    #: Dynamo's cache torch does not record
    calls: int
    distinct: int  # distinct subgraphs compiled: identifiers (nested) or compiles of the code (compiled_block)
    compile_ids: tuple[str, ...] = ()
    region_calls: tuple[RegionCall, ...] = ()
    #: compiled_block: the seconds its compiles took (compilation_metrics); -1 where torch does not time the
    #: region alone (a nested region is traced inside its frame's compile)
    compile_time_s: float = -1.0
    recompile_time_s: float = -1.0  # of that, the compiles after the first: what failed reuse cost
    kernels: int = -1  # kernels Inductor made for it, where provenance states it; -1: not stated
    note: str = ""

    @property
    def reused_calls(self) -> int:
        return sum(1 for c in self.region_calls if c.reused)

    @property
    def reuse(self) -> Optional[float]:
        """The share of calls served by a subgraph compiled for an earlier call; None where calls are unknown."""
        return round(self.reused_calls / self.calls, 4) if self.calls > 0 else None


@dataclass(frozen=True)
class Regions:
    """Every region of the run."""

    regions: tuple[Region, ...] = ()
