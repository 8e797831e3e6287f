"""Older torch's ``inductor_post_to_pre_grad_nodes``: where each post-grad node came from. No torch import.

Torch's nightlies of 2025 (tlparse's corpus) log it after Inductor's post-grad passes, before the output code, when
provenance tracking is on: ``{post-grad node: [node source, ...]}``, each source as ``torch.fx.traceback``'s
``NodeSource`` prints it (``{"name", "target", "graph_id", "pass_name", "action", "from_node": [sources]}``), the
chain back through every pass to the node a graph first had. Inductor keeps from it the nodes of the pre-grad graph
(``create_mapping_pre_post_grad_nodes``) as ``postToPre`` of the node mapping logged after the output code; this
reading gives the same where that mapping has none.
"""

from __future__ import annotations

import json
from typing import Any

#: the artifact's name
POST_TO_PRE_GRAD_NODES = "inductor_post_to_pre_grad_nodes"


def _roots(sources: list[Any], out: set[int]) -> bool:
    """Collect the graph ids of the sources no pass made from another node; False on a source not of the format."""
    stack = list(sources)
    while stack:
        s = stack.pop()
        if not isinstance(s, dict) or not isinstance(s.get("from_node", []), list):
            return False
        if not s.get("from_node"):
            gid = s.get("graph_id")
            if isinstance(gid, int) and gid >= 0:  # -1: a node a pattern made from no node
                out.add(gid)
        stack.extend(s.get("from_node") or ())
    return True


def post_to_pre(payload: str) -> dict[str, list[str]]:
    """Each post-grad node's pre-grad nodes; {} when the payload is not of the format or its chains start in more
    than one graph. The pre-grad graph's id is a Python object id the log does not name: it is the graph every
    chain starts in (the nodes Dynamo's graph had before Inductor's passes): so read, it names the nodes Inductor's
    own mapping names in each of the 64 compiles of tlparse's corpus that log both."""
    try:
        data = json.loads(payload) if payload else None
    except ValueError:
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        return {}
    roots: set[int] = set()
    if not all(_roots(v, roots) for v in data.values()) or len(roots) != 1:
        return {}
    pre_grad = roots.pop()
    out: dict[str, list[str]] = {}
    for post, sources in data.items():
        names: dict[str, None] = {}
        stack = list(sources)
        while stack:
            s = stack.pop(0)
            if s.get("graph_id") == pre_grad and isinstance(s.get("name"), str):
                names[s["name"]] = None
            stack.extend(s.get("from_node") or ())
        if names:
            out[str(post)] = list(names)
    return out
