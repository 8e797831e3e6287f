"""Regional compilation: which repeated blocks were compiled once and reused. No torch import.

Two kinds, both read from what torch records:

* ``nested_compile_region`` (torch.compiler): Dynamo traces the marked function once and calls the
  traced body again for later calls whose inputs pass its reuse checks
  (torch/_dynamo/variables/invoke_subgraph.py, "invoke_subgraph subgraph reuse"). Its graph holds one
  ``torch.ops.higher_order.invoke_subgraph(subgraph_N, 'identifier', *operands)`` node a call; calls that
  share an identifier share one traced (and compiled) body. A call that could not reuse gets a new
  identifier. Torch logs why only at debug level (``TORCH_LOGS=+hierarchical_compile``), not on the
  structured trace, so the inputs' printed properties are compared here instead.
* ``compiled_block``: a block's ``forward`` compiled on its own (accelerate's ``compile_regions``,
  diffusers' ``compile_repeated_blocks``, ``module.compile()`` on each layer): one code object, compiled
  once and reused by every block whose guards pass, or compiled again (a recompile, with the guard that
  failed) for a block that differs. Calls served from Dynamo's cache are not on the trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from tcinspect.parse.events import Event, json_payload, named
from tcinspect.report import (
    CompileMetrics,
    InductorStage,
    Node,
    Region,
    RegionCall,
    Regions,
    Stages,
)

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

NESTED = "nested_compile_region"
BLOCK = "compiled_block"

_INVOKE = "higher_order.invoke_subgraph"
_BODY = re.compile(r"^(\s*)class (subgraph_\d+)\(torch\.nn\.Module\):\s*$")
_FILE = re.compile(r"#\s*File:\s*(.+?):(\d+) in (\w+)")
_ANNOTATED = re.compile(r'(\w+): "([^"]*)"')
_ARG_TENSOR = re.compile(r"^(\w+)\[([^\]]*)\]\[([^\]]*)\](\w*)")
#: a subgraph body: (file, first line, function, inputs, ops)
_Body = tuple[str, int, str, tuple[str, ...], int]
_STACK_LINE = re.compile(r"Line: (\d+), Name: (.+?), Filename: (.+)$")


def build(events: Sequence[Event], stages: Stages, compiles: Sequence[CompileMetrics]) -> Optional[Regions]:
    """The run's regions, or None when it compiled none."""
    regions = [*_nested(stages), *_blocks(events, stages, compiles)]
    return Regions(tuple(regions)) if regions else None


# ----------------------------------------------------------------------------- nested_compile_region


def _bodies(code: str) -> dict[str, _Body]:
    """Each ``class subgraph_N`` body of a graph's readable code: (file, first line, function, inputs, ops)."""
    out: dict[str, _Body] = {}
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        m = _BODY.match(lines[i])
        if not m:
            i += 1
            continue
        indent, name = len(m.group(1)), m.group(2)
        body: list[str] = []
        i += 1
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i])
            i += 1
        where = next((f.groups() for f in map(_FILE.search, body) if f), ("", "0", ""))
        sig = next((b for b in body if b.strip().startswith("def forward(")), "")
        inputs = tuple(f"{n}: {a}" for n, a in _ANNOTATED.findall(sig))
        ops = sum(1 for b in body if re.match(r"\s+\w+(: \"[^\"]*\")? = (?!L_|self\.)", b))
        out[name] = (where[0], int(where[1]), where[2], inputs, ops)
    return out


def _module_path(operands: Sequence[str]) -> tuple[str, ...]:
    """The module path the parameters a call passes share ("model", "layers", "1", "mlp"), from their names."""
    paths = []
    for op in operands:
        m = re.match(r"(\w+?)_(parameters|buffers)_\w+_$", op)
        if m and "_modules_" in m.group(1):
            paths.append(m.group(1).split("_modules_")[1:])
    if not paths:
        return ()
    common = paths[0]
    for p in paths[1:]:
        n = 0
        while n < min(len(common), len(p)) and common[n] == p[n]:
            n += 1
        common = common[:n]
    return tuple(common)


def _blocks_of(paths: Sequence[tuple[str, ...]]) -> list[str]:
    """Each call's block: its module path up to the first part where the calls' paths differ ("layers.1")."""
    known = [p for p in paths if p]
    if len(known) < 2:
        return [".".join(p) for p in paths]
    depth = 0
    while all(len(p) > depth for p in known) and len({p[depth] for p in known}) == 1:
        depth += 1
    return [".".join(p[:depth + 1]) for p in paths]


def _describe(name: str, nodes: dict[str, Node]) -> tuple[str, str]:
    """An input as (where it comes from and its printed properties, the same with its name)."""
    n = nodes.get(name)
    if n is None:
        return "?", name
    where = "graph input" if n.op == "placeholder" else "intermediate"
    shape = f"{n.dtype}[{', '.join(n.shape)}]" if n.dtype else "?"
    stride = f" stride ({', '.join(n.stride)})" if n.stride else ""
    props = f"{shape}{stride} {n.device}".rstrip()
    return f"{where}|{props}", f"{where} {name} {props}"


def _activations(operands: Sequence[str]) -> list[str]:
    """The operands that are not the block's parameters or buffers."""
    return [o for o in operands if not re.search(r"_(parameters|buffers)_\w+_$", o)]


def _what_differed(first: RegionCall, call: RegionCall, props: dict[str, list[str]], first_body: _Body,
                   body: _Body) -> tuple[str, ...]:
    out = []
    a, b = props.get(first.node, []), props.get(call.node, [])
    if len(a) != len(b):
        out.append(f"{len(b)} tensor inputs, {first.subgraph} was traced with {len(a)}")
    for k, (pa, pb) in enumerate(zip(a, b)):
        if pa != pb:
            out.append(f"input {k}: {call.inputs[k]}; {first.subgraph} had {first.inputs[k]}")
    if first_body[4] != body[4]:
        out.append(f"its body has {body[4]} ops, {first.subgraph}'s {first_body[4]}")
    if out and all(pa.split("|")[1:] == pb.split("|")[1:] for pa, pb in zip(a, b)) and len(a) == len(b):
        out.append("a graph input and an intermediate can differ in requires_grad, which the graph does not print; "
                   "torch does not record on the trace which reuse check failed")
    if not out:
        out.append("every input's dtype, shape, stride and device as the graph prints them are equal: torch does not "
                   "record on the trace which reuse check failed (requires_grad, a constant, a guard on the "
                   "block's attributes); TORCH_LOGS=+hierarchical_compile logs it")
    return tuple(out)


def _nested(stages: Stages) -> list[Region]:
    out: list[Region] = []
    for dg in stages.dynamo.graphs:
        graph = dg.graph
        invokes = [n for n in graph.nodes if n.op == "call_function" and n.target.endswith(_INVOKE)]
        if not invokes:
            continue
        nodes = {n.name: n for n in graph.nodes}
        bodies = _bodies(graph.code)
        groups: dict[tuple[str, int, str], list[RegionCall]] = {}
        seen: set[str] = set()
        props: dict[str, list[str]] = {}
        for n in invokes:
            args = [a.strip() for a in n.args.split(",")]
            if len(args) < 2:
                continue
            ident = args[1].strip("'\"")
            body_attr = nodes[args[0]].target if args[0] in nodes else ident
            operands = args[2:]
            body = bodies.get(body_attr, ("", 0, "", (), 0))
            key = body[:3]
            described = [_describe(o, nodes) for o in _activations(operands)]
            props[n.name] = [d[0] for d in described]
            call = RegionCall(subgraph=ident, compile_id=dg.compile_id, reused=ident in seen, node=n.name,
                              user_line=n.source.short() if n.source else "", module=".".join(_module_path(operands)),
                              inputs=tuple(d[1] for d in described))
            seen.add(ident)
            groups.setdefault(key, []).append(call)
        for (file, line, function), calls in groups.items():
            blocks = _blocks_of([tuple(c.module.split(".")) if c.module else () for c in calls])
            calls = [RegionCall(**{**c.__dict__, "module": b}) for c, b in zip(calls, blocks)]
            firsts: dict[str, RegionCall] = {}
            done = []
            for c in calls:
                if not c.reused and firsts:
                    prev = next(iter(firsts.values()))
                    c = RegionCall(**{**c.__dict__, "differed": _what_differed(
                        prev, c, props, _body_of(bodies, nodes, prev), _body_of(bodies, nodes, c))})
                if not c.reused:
                    firsts.setdefault(c.subgraph, c)
                done.append(c)
            short = f"{file.rsplit('/', 1)[-1]}:{line}" if file else "?"
            out.append(Region(kind=NESTED, function=function or "?", where=short, calls=len(done),
                              distinct=len({c.subgraph for c in done}), compile_ids=(dg.compile_id,),
                              region_calls=tuple(done), kernels=_nested_kernels(stages.inductor, dg.compile_id, done),
                              note=_nested_note(done)))
    return out


def _nested_note(calls: Sequence[RegionCall]) -> str:
    once = [s for s in dict.fromkeys(c.subgraph for c in calls) if sum(1 for c in calls if c.subgraph == s) == 1]
    note = "torch times the frame's compile, not each region"
    if once:
        # torch/_dynamo/output_graph.py (2.13): config.inline_single_use_invoke_subgraph, on by default, inlines a
        # subgraph with one call site after dynamo_output_graph is logged, before the backend sees the graph
        note += (f"; {', '.join(once)} has one call: torch versions with inline_single_use_invoke_subgraph (on by "
                 "default in 2.13) inline it into the graph before the backend")
    return note


def _body_of(bodies: dict[str, _Body], nodes: dict[str, Node],
             call: RegionCall) -> _Body:
    node = nodes.get(call.node)
    attr = node.args.split(",")[0].strip() if node else ""
    target = nodes[attr].target if attr in nodes else call.subgraph
    return bodies.get(target, ("", 0, "", (), 0))


_SUBGRAPH_FN = re.compile(r"^def partitioned_(?:fw|bw)_(subgraph_\d+)_\d+\(")
_LAUNCH = re.compile(r"^\s*(?:\w+ = )?(?:extern_kernels\.\w+\(|cpp_fused_\w+\(|\w+\.run\()")


def subgraph_kernels(wrapper: str) -> dict[str, int]:
    """Kernel launches in each invoke_subgraph body Inductor compiled as a function of its own
    (``def partitioned_fw_subgraph_1_0(args)``, called once per region call), by identifier."""
    out: dict[str, int] = {}
    current = ""
    for line in wrapper.splitlines():
        m = _SUBGRAPH_FN.match(line)
        if m:
            current = m.group(1)
            out.setdefault(current, 0)
        elif current and line and not line[0].isspace():
            current = ""
        elif current and _LAUNCH.match(line):
            out[current] += 1
    return out


def _nested_kernels(inductor: InductorStage, compile_id: str, calls: Sequence[RegionCall]) -> int:
    """Kernels Inductor made for the region: those of its subgraphs' own functions (compiled once, run by every
    call), and for a subgraph torch inlined (one call), the catalog's kernels whose provenance names only that
    call's block. -1 when Inductor made no output code, or an inlined call's kernels have no provenance."""
    outputs = [o for o in inductor.outputs if o.compile_id == compile_id]
    if not outputs:
        return -1
    idents = {c.subgraph for c in calls}
    total = 0
    for o in outputs:
        total += sum(n for ident, n in subgraph_kernels(o.wrapper).items() if ident in idents)
    for c in calls:
        if sum(d.subgraph == c.subgraph for d in calls) > 1:
            continue
        kernels = [k for o in outputs for k in o.kernels]
        if not c.module or not any(k.modules for k in kernels):
            return -1
        total += sum(1 for k in kernels if k.modules and all(
            m == c.module or m.startswith(c.module + ".") for m in k.modules))
    return total


# ----------------------------------------------------------------------------- compiled blocks


def _stack(ev: Event) -> list[tuple[int, str, str]]:
    data = json_payload(ev) if ev.payload else None
    meta = data if isinstance(data, dict) else ev.meta
    out = []
    for line in meta.get("stack_trace") or ():
        m = _STACK_LINE.match(str(line))
        if m:
            out.append((int(m.group(1)), m.group(2), m.group(3)))
    return out


def _is_library(path: str) -> bool:
    return "/torch/" in path or "/tcinspect/" in path


def _blocks(events: Sequence[Event], stages: Stages, compiles: Sequence[CompileMetrics]) -> list[Region]:
    """Code objects compiled on their own while an eager module's forward called them (a block of a model
    that runs eagerly around it): each such code is a compiled_block region."""
    compiled = {(c.function, c.file) for c in compiles}
    stacks = {ev.compile_id: _stack(ev) for ev in named(events, "compilation_metrics")}
    reasons = {r.compile_id: r.reasons for r in stages.dynamo.recompiles}
    groups: dict[tuple[str, str, int], list[tuple[CompileMetrics, str]]] = {}
    for c in compiles:
        stack = stacks.get(c.compile_id, [])
        callers = stack[:-1]
        caller = next((s for s in reversed(callers) if s[1] == "forward" and not _is_library(s[2])), None)
        if caller is None or any((s[1], s[2]) in compiled for s in callers):
            continue
        if c.function.startswith("torch_dynamo_resume_in_"):
            continue
        groups.setdefault((c.function, c.file, c.line), []).append(
            (c, f"{caller[2].rsplit('/', 1)[-1]}:{caller[0]}"))
    out = []
    for (function, file, line), items in groups.items():
        calls = []
        for k, (c, user_line) in enumerate(items):
            differed: tuple[str, ...] = ()
            if k:
                failed = reasons.get(c.compile_id, ())
                # torch lists the failed guard of every earlier entry, newest first: the newest is the one
                # this call could have reused
                differed = (_first_line(failed[0]),) if failed else (
                    "torch recorded no recompile reason for this compile",)
                if len(failed) > 1:
                    differed += (f"and the guards of {len(failed) - 1} earlier compile(s) failed too",)
            calls.append(RegionCall(subgraph=c.compile_id, compile_id=c.compile_id, user_line=user_line,
                                    differed=differed))
        ids = {c.compile_id for c, _ in items}
        kernels = [k for o in stages.inductor.outputs if o.compile_id in ids for k in o.kernels]
        times = [c.entire_frame_compile_time_s for c, _ in items]
        out.append(Region(
            kind=BLOCK, function=function, where=f"{file.rsplit('/', 1)[-1]}:{line}", calls=-1,
            distinct=len(items), compile_ids=tuple(c.compile_id for c, _ in items), region_calls=tuple(calls),
            compile_time_s=round(sum(times), 6), recompile_time_s=round(sum(times[1:]), 6),
            kernels=len(kernels) if stages.inductor.outputs else -1,
            note="calls served from Dynamo's cache are not recorded by torch: each compile listed is a call that "
                 "did not reuse an earlier one"))
    return out


def _first_line(reason: str) -> str:
    first = reason.strip().splitlines()[0] if reason.strip() else reason
    return re.sub(r"\s{2,}", "  ", first)


def section(run: RunEvents) -> Optional[Regions]:
    """The report's section of regional compilation, from a run (report/sections.py registers it)."""
    return build(run.events, run.stages, run.metrics)
