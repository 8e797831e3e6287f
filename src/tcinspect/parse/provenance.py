"""Kernel provenance as Inductor states it: kernel -> post-grad nodes -> Dynamo nodes -> source frames.

Read from Inductor's provenance-tracking artifacts (see ``_compat.provenance.provenance_snapshot`` for what each
torch version gives) and tcinspect's own ``tcinspect_provenance`` record of the same graph. No torch
import: recorded traces and saved events go through the same functions.

A kernel whose node list Inductor stated is ``provenance: inductor``. One for which no statement exists
(tracking off, an older recorded trace, code loaded from a cache entry the user's own untracked run saved that
tcinspect never saw compiled, a malformed artifact) is ``provenance: unknown``: no source nodes, Dynamo nodes,
modules or user lines, never the wrapper comments' names (in a forward those are Dynamo's pre-grad nodes, not
the post-grad nodes the kernel computes). Its output says why and what gives the answer (``unknown_reason``).
Reports saved before kept the comment reading as ``provenance: inferred``; they read back as they were.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from tcinspect import outfile
from tcinspect.errors import TcinspectError
from tcinspect.parse.events import PROVENANCE_ARTIFACT
from tcinspect.report import Graph, Kernel, SourceLocation

NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
#: tcinspect's own record, logged right after STACK_TRACES: the kernel -> node lists Inductor held
#: when it logged them (the backward's, which its node mapping leaves out) and each node's module.
OWN = PROVENANCE_ARTIFACT

INDUCTOR = "inductor"
UNKNOWN = "unknown"
#: what reports saved before ``unknown`` called a kernel read from the wrapper's comments (still read and shown)
INFERRED = "inferred"

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)(?:\n(?P<code>[^\n]*))?')


@dataclass
class Statement:
    """What Inductor (and tcinspect's record) said about one output code's kernels."""

    kernels: dict[str, list[str]] = field(default_factory=dict)  # "name:handle" -> post-grad nodes
    post_to_pre: dict[str, list[str]] = field(default_factory=dict)
    stacks: dict[str, list[str]] = field(default_factory=dict)  # "name:handle" -> stack trace texts
    modules: dict[str, str] = field(default_factory=dict)  # post-grad node -> module path
    malformed: list[str] = field(default_factory=list)  # artifacts that could not be read
    #: (kernel name, "name:handle") of each launch in order, from tcinspect's record of the tracked code:
    #: the handles of the same code loaded from an entry the user's untracked run saved (no handle comments)
    launches: list[tuple[str, str]] = field(default_factory=list)
    #: (name, target, args) of each node of the post-grad graph tcinspect saw compiled, in order: the nodes of
    #: the same graph loaded from an untracked entry can carry other names (tcinspect's record, ``post_grad``)
    post_grad: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.kernels or self.stacks or self.modules)


def _str_lists(value: Any) -> Optional[dict[str, list[str]]]:
    if not isinstance(value, dict):
        return None
    out: dict[str, list[str]] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            return None
        out[k] = list(v)
    return out


def _load(payload: str) -> Any:
    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return None


def add_event(st: Statement, name: str, payload: str) -> None:
    """Fold one provenance record into ``st``; an unreadable one is noted in ``st.malformed``."""
    if not payload.strip() or payload.strip() == "null":
        return  # logged without a payload: tracking was off when the code was compiled (an untracked entry)
    data = _load(payload)
    if name == NODE_MAPPINGS:
        if not isinstance(data, dict):
            st.malformed.append(name)
            return
        kernels = _str_lists(data.get("cppCodeToPost", {}))
        pre = _str_lists(data.get("postToPre", {}))
        if kernels is None or pre is None:
            st.malformed.append(name)
            return
        st.kernels.update(kernels)
        st.post_to_pre.update(pre)
    elif name == STACK_TRACES:
        stacks = _str_lists(data)
        if stacks is None:
            st.malformed.append(name)
            return
        st.stacks.update(stacks)
    elif name == OWN:
        if not isinstance(data, dict):
            st.malformed.append(name)
            return
        kernels = _str_lists(data.get("kernels", {}))
        modules = data.get("modules", {})
        if kernels is None or not isinstance(modules, dict):
            st.malformed.append(name)
            return
        for k, nodes in kernels.items():
            st.kernels.setdefault(k, nodes)  # Inductor's own mapping artifact wins where it has the kernel
        st.modules.update({str(k): str(v) for k, v in modules.items()})
        for k, pre_nodes in (_str_lists(data.get("post_to_pre", {})) or {}).items():
            st.post_to_pre.setdefault(k, pre_nodes)
        for k, texts in (_str_lists(data.get("stacks", {})) or {}).items():
            st.stacks.setdefault(k, texts)
        launches = data.get("launches", [])
        if isinstance(launches, list):
            st.launches = [(str(x[0]), str(x[1])) for x in launches
                           if isinstance(x, list) and len(x) == 2 and all(isinstance(v, str) for v in x)]
        outline = data.get("post_grad", [])
        if isinstance(outline, list):
            st.post_grad = [(x[0], x[1], x[2]) for x in outline
                            if isinstance(x, list) and len(x) == 3 and all(isinstance(v, str) for v in x)]


def unreadable(events: Iterable[Any]) -> dict[str, int]:
    """Provenance artifacts among ``events`` whose payload cannot be read, counted by name (Report.parse)."""
    out: dict[str, int] = {}
    for e in events:
        if e.name in (NODE_MAPPINGS, STACK_TRACES, OWN):
            st = Statement()
            add_event(st, e.name, e.payload)
            if st.malformed:
                out[e.name] = out.get(e.name, 0) + 1
    return out


def frames_of(stack: str) -> list[SourceLocation]:
    """The frames of one stack-trace text, outermost first."""
    return [SourceLocation(file=m["file"], line=int(m["line"]), function=m["fn"].strip(),
                           code=(m["code"] or "").strip()) for m in _FRAME.finditer(stack)]


def _aten(target: str) -> str:
    parts = target.split(".")
    if "ops" in parts:
        parts = parts[parts.index("ops") + 1:]
    return ".".join(parts[:2]) if len(parts) >= 2 else target


def outline(graph: Graph) -> list[list[str]]:
    """[name, target, args] of each node of a graph, in order: what ``renamed`` compares."""
    return [[n.name, n.target, n.args] for n in graph.nodes]


_NAME = re.compile(r"[A-Za-z_]\w*")


def _shape(nodes: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    # each node's target and arguments with every node name replaced by the node's position
    where = {name: i for i, (name, _, _) in enumerate(nodes)}
    return [(target, _NAME.sub(lambda m: f"%{where[m.group(0)]}" if m.group(0) in where else m.group(0), args))
            for _, target, args in nodes]


def renamed(st: Statement, post_grad: Graph) -> Statement:
    """``st`` with the recorded graph's node names replaced by ``post_grad``'s, where the two are the same
    graph: node for node the same target on the same arguments, in the same order. Inductor's backward
    compile can number its nodes differently with tracking on (the joint graph's names) than the user's
    untracked compile of the same graph; only the names differ, so the record holds node for node."""
    current = [(n.name, n.target, n.args) for n in post_grad.nodes]
    if not st.post_grad or len(st.post_grad) != len(current) or \
            all(a[0] == b[0] for a, b in zip(st.post_grad, current)) or _shape(st.post_grad) != _shape(current):
        return st
    to = {a[0]: b[0] for a, b in zip(st.post_grad, current)}
    return replace(st, kernels={k: [to.get(n, n) for n in v] for k, v in st.kernels.items()},
                   post_to_pre={to.get(k, k): v for k, v in st.post_to_pre.items()},
                   modules={to.get(k, k): v for k, v in st.modules.items()}, post_grad=current)


def apply(kernels: tuple[Kernel, ...], st: Statement, post_grad: Optional[Graph]) -> tuple[Kernel, ...]:
    """Each kernel with its stated provenance, or marked inferred where Inductor stated none."""
    order = {n.name: i for i, n in enumerate(post_grad.nodes)} if post_grad is not None else {}
    if post_grad is not None and st.launches and not any(k.provenance_key for k in kernels):
        st = renamed(st, post_grad)
    if st.launches and order and not any(k.provenance_key for k in kernels) and len(st.launches) == len(kernels) \
            and all(name == k.name for (name, _), k in zip(st.launches, kernels)) \
            and all(n in order for _, key in st.launches for n in st.kernels.get(key, ())):
        # the same code as tcinspect saw compiled, loaded from an untracked entry: its launches in order.
        # Only where every node the record names is in this post-grad graph: a tracked backward compile can
        # name its nodes differently from the user's untracked one, and then the record is not used.
        kernels = tuple(replace(k, provenance_key=key) if key else k for (_, key), k in zip(st.launches, kernels))
    targets = {n.name: n.target for n in post_grad.nodes} if post_grad is not None else {}
    out = []
    for k in kernels:
        key = k.provenance_key
        nodes = st.kernels.get(key) if key else None
        stacks = st.stacks.get(key) if key else None
        if nodes is None:
            # no statement: nothing of the comment reading is kept (a user Triton kernel's own file is no mapping)
            changes: dict[str, Any] = {"provenance": UNKNOWN, "source_nodes": (), "dynamo_nodes": (), "modules": (),
                                       "frames": ()}
            if k.kind != "user_triton":
                changes["user_lines"] = ()
        else:
            ordered = sorted(dict.fromkeys(nodes), key=lambda n: (order.get(n, len(order)), n))
            aten = tuple(dict.fromkeys(_aten(targets[n]) for n in ordered
                                       if targets.get(n, "").startswith(("torch.ops.", "aten.", "prims."))))
            pre = tuple(dict.fromkeys(p for n in ordered for p in st.post_to_pre.get(n, ())))
            modules = tuple(dict.fromkeys(st.modules[n] for n in ordered if n in st.modules))
            changes = {"provenance": INDUCTOR, "source_nodes": tuple(ordered), "aten_ops": aten or k.aten_ops,
                       "dynamo_nodes": pre, "modules": modules}
        if stacks is not None:
            traces = [frames_of(s) for s in stacks]
            changes["frames"] = tuple(dict.fromkeys(f for t in traces for f in t))
            changes["user_lines"] = tuple(dict.fromkeys(f"{t[-1].file}:{t[-1].line}" for t in traces if t))
        out.append(replace(k, **changes))
    return tuple(out)


def unknown_reason(cache: str, st: Statement) -> str:
    """Why the kernels of one output have no stated provenance, and what gives it: "" when every kernel has it.

    One line, the cause then the fix (``cause — fix``), for the report (``OutputCode.unknown_provenance``)."""
    if st.malformed:
        return (f"Inductor's provenance artifacts could not be read ({', '.join(dict.fromkeys(st.malformed))}) — "
                "record the run again, or let tcinspect compile the model")
    if cache == "hit":
        return ("loaded from an FX graph cache entry that a run without provenance tracking saved (e.g. your own "
                "torch.compile), and tcinspect has no record of compiling that code — run with --fresh, which "
                "compiles in a private cache and leaves yours untouched")
    return ("Inductor stated no node mapping: the run did not track provenance — record with INDUCTOR_PROVENANCE=1 "
            "(torch._inductor.config.trace.provenance_tracking_level = 1), or let tcinspect compile the model")


# ----------------------------------------------------------------------------- the record store
#
# An FX graph cache hit logs the node mapping and stack traces saved with the cache entry, and a
# backward's saved mapping holds no kernels. tcinspect keeps its own record of each graph it saw
# compiled, keyed by the output code's hash, in tcinspect's cache directory (capturing/records.py), and
# reads it back when the same code comes from the cache.

#: the folder inside Inductor's cache directory where earlier versions kept these records (read only now)
STORE_FOLDER = "tcinspect-provenance"


#: the comment a tracked compile writes above each launch (Inductor's codegen/wrapper.py, 2.11-2.15)
HANDLE_MARK = "[Provenance debug handles]"


def untracked(wrapper: str) -> str:
    """Output code as an untracked compile of the same graph writes it: without the handle comments."""
    if HANDLE_MARK not in wrapper:
        return wrapper
    return "".join(line for line in wrapper.splitlines(keepends=True) if HANDLE_MARK not in line)


def _code_only(wrapper: str) -> str:
    # comments differ between a tracked and an untracked compile of the same graph (the handles, the
    # AOT ID counter of the process, the source-node names of a backward): the code is what must match
    return "".join(line for line in wrapper.splitlines(keepends=True) if not line.lstrip().startswith("#"))


def store_key(wrapper: str) -> str:
    # keyed by the code as the user's (untracked) run writes it, so a record of tcinspect's tracked
    # compile serves the entry the user's own run saved for the same graph
    return hashlib.sha256(_code_only(wrapper).encode("utf-8", "surrogatepass")).hexdigest()[:40]


def remember(store: Path, wrapper: str, record: dict[str, Any]) -> None:
    """Keep ``record`` for this output code; an unwritable store only means a warm run infers more."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        outfile.write(store / f"{store_key(wrapper)}.json", json.dumps(record, sort_keys=True))
    except (OSError, TcinspectError):  # e.g. a directory in the way: left as it is
        pass


def recall(store: Path, wrapper: str) -> Optional[dict[str, Any]]:
    try:
        data = json.loads((store / f"{store_key(wrapper)}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def json_dict(payload: str) -> dict[str, Any]:
    """A JSON object payload, or {} when it is not one."""
    data = _load(payload)
    return data if isinstance(data, dict) else {}
