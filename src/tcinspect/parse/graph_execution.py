"""The order a process ran its compiled graphs, as Inductor logged it. No torch import.

Torch logs it only inside a ``torch._inductor.debug.record_and_log_graph_execution_order()`` block: one
``graph_execution`` artifact when the block ends (torch 2.13, and PyTorch's main branch since August 2025),
``{"graph_execution_order": [{"compile_id": "0/1"}, ...]}``, an entry per call of a compiled graph
(``CompiledFxGraph.__call__``) naming its compile id as torch's ``CompileId`` prints it, null where torch did not
know it. A nightly of August 2025 (PyTorch PR 160448) logged an ``inductor_graph_execution`` artifact per call
instead, ``{"graph": "graph_0"}``: Inductor's graph number (compile_fx's graph counter), not a compile id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Optional

from tcinspect.parse.events import Event, json_payload

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

GRAPH_EXECUTION = "graph_execution"
#: the August 2025 nightly's one record per call
PER_CALL = "inductor_graph_execution"
#: an entry torch logged without a compile id
UNKNOWN = "?"


def _entries(ev: Event) -> Optional[list[str]]:
    """The graphs one record says ran, in order; None when its payload is not in either form."""
    data = json_payload(ev)
    if not isinstance(data, dict):
        return None
    if ev.name == PER_CALL:
        graph = data.get("graph")
        return [graph] if isinstance(graph, str) else None
    order = data.get("graph_execution_order")
    if not isinstance(order, list):
        return None
    out = []
    for item in order:
        cid = item.get("compile_id") if isinstance(item, dict) else item  # tlparse reads bare strings too
        if cid is None:
            out.append(UNKNOWN)
        elif isinstance(cid, str):
            out.append(cid)
        else:
            return None
    return out


def build(events: Iterable[Event]) -> tuple[str, ...]:
    """Each compiled graph the process ran, in order: its compile id (or torch's graph name), one block after
    another; () when torch logged no order."""
    out: list[str] = []
    for ev in events:
        if ev.name in (GRAPH_EXECUTION, PER_CALL):
            out.extend(_entries(ev) or ())
    return tuple(out)


def unreadable(events: Iterable[Event]) -> dict[str, int]:
    """Execution-order records whose payload cannot be read, counted by name (Report.parse)."""
    out: dict[str, int] = {}
    for ev in events:
        if ev.name in (GRAPH_EXECUTION, PER_CALL) and _entries(ev) is None:
            out[ev.name] = out.get(ev.name, 0) + 1
    return out


def section(run: RunEvents) -> tuple[str, ...]:
    """The report's section of the compiled graphs the process ran, in order, from a run (report/sections.py registers it)."""
    return build(run.events)
