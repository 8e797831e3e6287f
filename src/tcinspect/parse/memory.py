"""What each AOT forward graph saves for its backward graph: bytes per saved tensor, by kind, module and line.

Read from the forward graph's text (its ``SavedForBackwardsAOTOutput`` outputs, each node's dtype and
shape), Dynamo's graph (which parameter each ``primals_N`` is), ``create_symbol`` events (the hint of each
symbol), and tcinspect's own records logged beside the graphs (each forward node's module; Inductor's peak
estimates). No torch import: a recorded trace or a TORCH_TRACE log reads the same way, with the module of
an activation left blank where no tcinspect record was logged.

Bytes are counted per storage, as the autograd engine keeps them alive: a saved view (``view``, ``t``,
``permute``, ``detach``, a ``getitem`` of ``split`` ...) of a tensor whose storage is already counted adds
nothing; the first saved tensor of a storage counts the bytes of the node that allocated it.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any, Optional

from tcinspect.parse import events as ev_mod
from tcinspect.parse.events import Event
from tcinspect.parse.fxgraph import _split_top
from tcinspect.parse.memo import memoized
from tcinspect.report import (
    AotGraphs,
    DynamoGraph,
    Graph,
    GraphMemory,
    InductorPeak,
    Memory,
    Node,
    OutputCode,
    SavedTensor,
    Stages,
)
from tcinspect.vocabulary import ITEMSIZE

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: ATen ops whose output shares its input's storage
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "t", "permute", "transpose", "expand", "alias", "detach", "slice", "select",
    "unsqueeze", "squeeze", "as_strided", "diagonal", "narrow", "unfold", "view_as_real", "view_as_complex",
    "_reshape_alias", "unbind", "split", "split_with_sizes", "chunk", "numpy_T", "mT", "mH", "adjoint",
    "view_as", "expand_as", "movedim", "_conj", "_neg_view", "real", "imag", "_nested_view_from_buffer",
})
#: where earlier versions kept tcinspect's records of module paths and Inductor's estimates, inside
#: Inductor's cache directory (read only now: capturing/records.py keeps them in tcinspect's own)
STORE_FOLDER = "tcinspect-memory"
_MARKER = re.compile(r"_(?:modules|parameters|buffers)_")
_SYMBOL = re.compile(r"[A-Za-z_]\w*")


def _op(target: str) -> str:
    """``aten.mm.default`` -> ``aten.mm``."""
    parts = target.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0] in ("aten", "prims") else target


def parameter_name(dynamo_input: str) -> str:
    """A module's parameter or buffer from Dynamo's name for the graph input, e.g.
    ``l_self_modules_fc1_parameters_weight_`` -> ``fc1.weight``; "" for an input that is not one."""
    m = _MARKER.search(dynamo_input)
    if m is None:
        return ""
    parts = [p for p in _MARKER.split(dynamo_input[m.start():].rstrip("_"))]
    return ".".join(p for p in parts if p)


def _eval(expr: str, hints: dict[str, int]) -> Optional[int]:
    """An integer size expression (sympy's printing: + - * // and parentheses) at the given hints."""
    ops: dict[type, Callable[[Any, Any], Any]] = {ast.Add: operator.add, ast.Sub: operator.sub,
                                                  ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}

    def walk(n: ast.AST) -> int:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name) and n.id in hints:
            return hints[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return int(ops[type(n.op)](walk(n.left), walk(n.right)))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -walk(n.operand)
        raise ValueError(expr)

    try:
        return walk(ast.parse(expr, mode="eval").body)
    except (ValueError, SyntaxError, RecursionError):
        return None


def size_in_bytes(dtype: str, shape: Sequence[str], hints: dict[str, int]) -> tuple[int, str]:
    """(bytes at the hints, bytes as an expression when a size is symbolic else "") of a dense tensor;
    bytes -1 when the dtype or a symbol's hint is unknown."""
    item = ITEMSIZE.get(dtype)
    if item is None:
        return -1, ""
    static = [int(d) for d in shape if d.lstrip("-").isdigit()]
    symbolic = [d for d in shape if not d.lstrip("-").isdigit()]
    const = item * prod(static)
    if not symbolic:
        return const, ""
    factors = [f"({d})" if re.search(r"[-+ ]", d) else d for d in symbolic]
    expr = "*".join(([str(const)] if const != 1 else []) + factors)
    value = _eval(expr, hints)
    return (value if value is not None else -1), expr


def hints_of(events: Iterable[Event]) -> dict[str, dict[str, int]]:
    """Each compile's symbols and their traced hints, from ``create_symbol`` events."""
    out: dict[str, dict[str, int]] = {}
    for e in events:
        if e.name == "create_symbol":
            sym, val = e.meta.get("symbol"), e.meta.get("val")
            try:
                out.setdefault(e.compile_id, {})[str(sym)] = int(str(val))
            except (TypeError, ValueError):
                continue
    return out


def _base(node: Node, nodes: dict[str, Node]) -> Node:
    """The node that allocated ``node``'s storage, following views."""
    seen = 0
    while seen < 10_000:
        seen += 1
        op = _op(node.target).split(".")[-1]
        first = _split_top(node.args)[0].strip() if node.args else ""
        if node.target == "operator.getitem":
            src = nodes.get(first)
            if src is None or _op(src.target).split(".")[-1] not in VIEW_OPS:
                return node  # an output of a multi-output op (e.g. attention) is its own allocation
            node = src
            continue
        if op in VIEW_OPS and first in nodes and node.op == "call_function":
            node = nodes[first]
            continue
        return node
    return node


def graph_memory(cid: str, aot: AotGraphs, dynamo: Optional[DynamoGraph], hints: dict[str, int],
                 modules: dict[str, str], note: str = "", budget: float = -1.0,
                 peaks: tuple[InductorPeak, ...] = ()) -> Optional[GraphMemory]:
    """What one forward graph saves for its backward; None for a graph with no backward."""
    fwd, bwd = aot.forward, aot.backward
    if fwd is None or not fwd.saved_for_backward:
        return None
    saved, hinted, recomputed = _saved(fwd, bwd, dynamo.graph if dynamo is not None else None,
                                       tuple(hints.items()), tuple(modules.items()))
    return GraphMemory(compile_id=cid, saved=saved, hints=hinted, recomputed=recomputed, memory_budget=budget,
                       inductor_peaks=peaks, note=note)


@memoized
def _saved(fwd: Graph, bwd: Optional[Graph], user: Optional[Graph], hint_items: tuple[tuple[str, int], ...],
           module_items: tuple[tuple[str, str], ...]) -> tuple[tuple[SavedTensor, ...], tuple[tuple[str, str], ...],
                                                               tuple[str, ...]]:
    """What a forward graph saves for its backward, the hints of the symbols in their sizes, and what the backward
    computes again (the same graphs on ranks that compiled alike)."""
    hints, modules = dict(hint_items), dict(module_items)
    nodes = {n.name: n for n in fwd.nodes}
    inputs = [n for n in fwd.nodes if n.op == "placeholder"]
    dyn_inputs = [n for n in user.nodes if n.op == "placeholder"] if user is not None else []
    params = {}
    if len(dyn_inputs) == len(inputs):  # primals_N is Dynamo's Nth graph input (plain tensors and symbols)
        params = {p.name: parameter_name(d.target or d.name) for p, d in zip(inputs, dyn_inputs)}
    counted: set[str] = set()
    saved = []
    for name in fwd.saved_for_backward:
        node = nodes.get(name)
        if node is None or node.dtype in ("", "sym"):
            continue  # a symbolic size the backward needs: no tensor, no storage
        base = _base(node, nodes)
        size, expr = size_in_bytes(base.dtype, base.shape, hints)
        first = base.name not in counted
        counted.add(base.name)
        root = base if base.op == "placeholder" else None
        param = params.get(root.name, "") if root is not None else ""
        kind = "parameter" if param else ("input" if root is not None else "activation")
        module = param.rsplit(".", 1)[0] if "." in param else (modules.get(name) or modules.get(base.name, ""))
        src = node.source or base.source
        saved.append(SavedTensor(
            name=name, kind=kind, dtype=node.dtype, shape=node.shape, bytes=max(size, 0) if first else 0,
            bytes_expr=expr if first else "", storage=base.name if base.name != name else "",
            op="" if node.op == "placeholder" else _op(node.target), module=module, parameter=param,
            line=f"{src.file}:{src.line}" if src else "", code=src.code if src else ""))
    computed = {n.name for n in fwd.nodes if n.op == "call_function"}
    recomputed = tuple(n.name for n in bwd.nodes if n.op == "call_function" and n.name in computed) if bwd else ()
    symbols = sorted({s for t in saved for s in _SYMBOL.findall(t.bytes_expr)})
    return tuple(saved), tuple((s, str(hints[s]) if s in hints else "?") for s in symbols), recomputed


def _per_forward(group: list[Event], name: str) -> list[Optional[Event]]:
    """For each aot_forward_graph of a compile, the ``name`` record logged after it (before the next one)."""
    out: list[Optional[Event]] = []
    for e in group:
        if e.name == "aot_forward_graph":
            out.append(None)
        elif e.name == name and out and out[-1] is None:
            out[-1] = e
    return out


def _peaks(group: list[Event], outputs: list[OutputCode]) -> list[InductorPeak]:
    """Inductor's estimates, each for the output code logged after it."""
    pending: Optional[dict[str, Any]] = None
    found, k = [], 0
    for e in group:
        if e.name == ev_mod.INDUCTOR_MEMORY_ARTIFACT:
            data = ev_mod.json_payload(e)
            pending = data.get("orm") if isinstance(data, dict) and isinstance(data.get("orm"), dict) else None
        elif e.name == "inductor_output_code":
            if pending and k < len(outputs):
                methods = tuple((str(m), int(b)) for m, b in pending.items() if isinstance(b, (int, float)))
                found.append(InductorPeak(part=outputs[k].part, aot_id=outputs[k].aot_id, methods=methods))
            pending = None
            k += 1
    return found


def build(events: Sequence[Event], stages: Stages, not_measured: str = "") -> Optional[Memory]:
    """The memory section of a run: one entry per forward graph with a backward; None when there is none."""
    groups = ev_mod.by_compile_id(events)
    hints = hints_of(events)
    dynamo = {g.compile_id: g for g in stages.dynamo.graphs}
    graphs = []
    for cid in dict.fromkeys(g.compile_id for g in stages.aot_autograd.graphs):
        group = groups.get(cid, [])
        last = max((e.attempt for e in group), default=0)
        group = [e for e in group if e.attempt == last]
        sets = [g for g in stages.aot_autograd.graphs if g.compile_id == cid]
        forwards = [g for g in sets if g.forward is not None]
        records = _per_forward(group, ev_mod.SAVED_MODULES_ARTIFACT)
        budgets = _per_forward(group, "min_cut_information")
        peaks = _peaks(group, [o for o in stages.inductor.outputs if o.compile_id == cid])
        for i, aot in enumerate(forwards):
            record = records[i] if i < len(records) else None
            data = ev_mod.json_payload(record) if record is not None else None
            modules = {str(k): str(v) for k, v in (data.get("modules") or {}).items()} if isinstance(data, dict) else {}
            note = str(data.get("note", "")) if isinstance(data, dict) else (
                "no module record: a recorded trace or TORCH_TRACE log (tcinspect logs one in its own captures)")
            cut = budgets[i] if i < len(budgets) else None
            mc = ev_mod.json_payload(cut) if cut is not None else None
            budget = float(mc.get("Memory Budget", -1.0)) if isinstance(mc, dict) else -1.0
            mine = tuple(peaks) if i == 0 else ()  # several forwards under one compile id: DDPOptimizer's
            gm = graph_memory(cid, aot, dynamo.get(cid), hints.get(cid, {}), modules, note, budget, mine)
            if gm is not None:
                graphs.append(gm)
    if not graphs:
        return None
    return Memory(graphs=tuple(graphs), not_measured=not_measured)


def modules_record(modules: dict[str, str], note: str = "") -> str:
    """The payload of tcinspect's module record for one forward graph (capturing/recorder.py logs it)."""
    return json.dumps({"modules": modules, "note": note}, sort_keys=True)


def section(run: RunEvents) -> Optional[Memory]:
    """The report's section of what the forward graphs save for backward, from a run (report/sections.py registers it)."""
    return build(run.events, run.stages)
