"""What each user FX pass (``--pass``) changed on each ATen graph."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NodeChange:
    """One node a graph pass removed, added or replaced (FX node text as ``name = target(args)``)."""

    change: str  # removed | added | replaced (by the added node that took its users) | changed (in place)
    before: str = ""
    after: str = ""


@dataclass(frozen=True)
class PassRun:
    """One FX pass applied to one ATen graph before Inductor."""

    name: str  # as given: module:fn or file.py:fn
    compile_id: str
    graph: str  # forward | backward | inference
    nodes_before: int
    nodes_after: int
    changes: tuple[NodeChange, ...] = ()
    lint: str = "ok"  # "ok", or what graph.lint() raised
    error: str = ""  # what the pass itself raised or returned wrongly
    #: ops this pass put into a graph bound for Inductor that Inductor cannot lower (it only decomposes them, before
    #: AOTAutograd): after the last pass each is decomposed with Inductor's own table, as its pattern replacements are
    decomposed: tuple[str, ...] = ()
