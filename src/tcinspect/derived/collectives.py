"""The collectives each compiled graph runs, in order: read from the graphs torch recorded. Pure.

Source, per compile (first that has them): Inductor's post-grad graphs (the ops Inductor compiled), else
AOTAutograd's forward/backward/inference graphs (``aot_eager``), else Dynamo's graph (``eager``). A collective
is a call of a ``_c10d_functional`` op other than ``wait_tensor``: its kind, process group (the op's last
string argument, torch's group name), and the output's dtype and shape as the graph prints them. Where Inductor
logged ``inductor_collective_schedule`` (the order it issues them after its reordering passes), the
collectives are put in that order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from tcinspect.derived import ids
from tcinspect.report import Graph, Stages
from tcinspect.vocabulary import static_nbytes

_OP = re.compile(r"(?:^|\.)_?c10d_functional\.(\w+?)_?(?:\.\w+)?$")
_STRING_ARG = re.compile(r"'([^']*)'|\"([^\"]*)\"")


@dataclass(frozen=True)
class Collective:
    """One collective a compiled graph runs."""

    compile_id: str
    part: str  # forward | backward | inference | dynamo
    index: int  # 1-based, within its graph
    kind: str  # all_reduce, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, broadcast, ...
    group: str  # torch's process-group name ("0" is the default group)
    dtype: str
    shape: tuple[str, ...]
    node: str  # the graph's node (torch attributes a functional collective to the library line issuing it)

    @property
    def key(self) -> tuple[str, str, str, str, tuple[str, ...]]:
        """What two ranks must agree on: its text without object ids or the rank's own GPU index (its sizes as
        they are)."""
        return (self.part, self.kind, ids.masked(self.group), ids.device_masked(ids.masked(self.dtype)), self.shape)

    @property
    def nbytes(self) -> Optional[int]:
        """The output tensor's size in bytes (None where a size is symbolic or the dtype unknown)."""
        return static_nbytes(self.dtype, self.shape)

    @property
    def tensor(self) -> str:
        """The output tensor as the graph prints it, e.g. ``f32[16, 64]`` ("?" without its dtype)."""
        return f"{self.dtype}[{', '.join(self.shape)}]" if self.dtype else "?"

    def text(self) -> str:
        return f"{self.kind} {self.tensor} group {self.group or '?'}"


def kind_of(target: str) -> str:
    """A collective op's kind ("" for any other op, and for wait_tensor)."""
    m = _OP.search(target)
    if m is None or m.group(1) == "wait_tensor":
        return ""
    return m.group(1)


def _of_graph(cid: str, part: str, graph: Graph, schedule: tuple[str, ...] = ()) -> list[Collective]:
    found = []
    for n in graph.nodes:
        kind = kind_of(n.target) if n.op == "call_function" else ""
        if not kind:
            continue
        strings = [a or b for a, b in _STRING_ARG.findall(n.args)]
        found.append(Collective(cid, part, 0, kind, strings[-1] if strings else "", n.dtype, n.shape, n.name))
    kinds = [kind_of(op) for op in schedule if kind_of(op)]
    if kinds and sorted(kinds) == sorted(c.kind for c in found):
        left, ordered = list(found), []
        for kind in kinds:  # Inductor's issue order: each scheduled op is the next unused one of its kind
            i = next(j for j, c in enumerate(left) if c.kind == kind)
            ordered.append(left.pop(i))
        found = ordered
    return [Collective(c.compile_id, c.part, i + 1, c.kind, c.group, c.dtype, c.shape, c.node)
            for i, c in enumerate(found)]


def of_stages(stages: Stages, compile_id: str = "") -> list[Collective]:
    """Every collective of every compile (or of ``compile_id`` only), compile by compile, in order."""
    out: list[Collective] = []
    ids = [g.compile_id for g in stages.dynamo.graphs]
    ids += [o.compile_id for o in stages.inductor.outputs if o.compile_id not in ids]
    for cid in ids:
        if compile_id and cid != compile_id:
            continue
        outputs = [o for o in stages.inductor.outputs if o.compile_id == cid and o.post_grad_graph is not None]
        if outputs:
            for o in outputs:
                assert o.post_grad_graph is not None
                out += _of_graph(cid, o.part, o.post_grad_graph, o.collective_schedule)
            continue
        aot = next((a for a in stages.aot_autograd.graphs if a.compile_id == cid), None)
        parts = [(p, getattr(aot, p)) for p in ("forward", "backward", "inference")] if aot is not None else []
        if any(g is not None for _, g in parts):
            for part, g in parts:
                if g is not None:
                    out += _of_graph(cid, part, g)
            continue
        dyn = next((g for g in stages.dynamo.graphs if g.compile_id == cid), None)
        if dyn is not None:
            out += _of_graph(cid, "dynamo", dyn.graph)
    return out
