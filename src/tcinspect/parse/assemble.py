"""Structured-trace events -> report stages. Pure: no torch, so recorded traces work anywhere."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Optional

from tcinspect.parse import events as ev_mod
from tcinspect.parse import provenance
from tcinspect.parse.breaks import is_backend_failure, parse_backend_failure, parse_break
from tcinspect.parse.events import BACKEND_INPUTS_ARTIFACT, PASS_ARTIFACT, Event
from tcinspect.parse.fxgraph import parse_graph
from tcinspect.parse.guards import parse_guards, suggest_recompile_fix
from tcinspect.parse.inductor import aot_id_of, parse_output_code, part_of
from tcinspect.parse.memo import memoized
from tcinspect.parse.post_to_pre import POST_TO_PRE_GRAD_NODES, post_to_pre
from tcinspect.report import (
    FAILED,
    NOT_RUN,
    OK,
    AotGraphs,
    AotStage,
    BackendFailure,
    CompileMetrics,
    CustomOp,
    DynamoGraph,
    DynamoStage,
    Graph,
    InductorStage,
    Kernel,
    NodeChange,
    OutputCode,
    PassRun,
    Recompile,
    SourceLocation,
    Stages,
    UserKernel,
)

if TYPE_CHECKING:
    from tcinspect.parse.run import RunEvents

#: Stages each kind of backend runs; anything else is assumed to run them all.
BACKEND_STAGES = {
    "eager": ("dynamo",),
    "aot_eager": ("dynamo", "aot_autograd"),
    "aot_eager_decomp_partition": ("dynamo", "aot_autograd"),
    "inductor": ("dynamo", "aot_autograd", "inductor"),
}

_AOT_EVENTS = {
    "aot_joint_graph": "joint",
    "aot_forward_graph": "forward",
    "aot_backward_graph": "backward",
    "aot_inference_graph": "inference",
}


@dataclass(frozen=True)
class StageFailure:
    """What stopped a run, and at which stage ("dynamo", "aot_autograd", "inductor")."""

    stage: str
    message: str
    #: the whole error line, when '<stage> stage failed: <message>' does not say it (a --backend or --pass
    #: the user gave is at fault; the run ended before it wrote a report)
    blame: str = ""
    fix: str = ""
    #: Report.failure's kind (report.FAILURE_KINDS): a compiler stage, unless the user's own target or a crash
    kind: str = "stage"


@memoized
def _clean(code: str) -> str:
    """Generated code with trailing spaces removed, so YAML can hold it as a block scalar."""
    return "\n".join(line.rstrip() for line in code.strip("\n").splitlines()) + "\n"


def _latest_attempt(events: list[Event]) -> list[Event]:
    """Events of a compile id's last attempt (earlier attempts were restarted by Dynamo)."""
    last = max((e.attempt for e in events), default=0)
    return [e for e in events if e.attempt == last]


def _metrics(cid: str, events: list[Event]) -> CompileMetrics:
    m: dict[str, Any] = {}
    for e in events:
        if e.name == "compilation_metrics":
            m = e.meta
    aot_cache = ""
    for e in events:
        if e.name.startswith("aotautograd_cache_"):
            aot_cache = e.name.rsplit("_", 1)[-1]
    start = next((e for e in events if e.name == "dynamo_start"), None)
    function, file, line = m.get("co_name") or "", m.get("co_filename") or "", m.get("co_firstlineno") or 0
    if not function and start is not None:
        frames = start.meta.get("stack") or []
        if frames:
            function, line = str(frames[-1].get("name", "")), int(frames[-1].get("line", 0))

    def num(key: str) -> float:
        v = m.get(key)
        return float(v) if isinstance(v, (int, float)) else 0.0

    return CompileMetrics(
        compile_id=cid,
        function=str(function),
        file=str(file),
        line=int(line or 0),
        entire_frame_compile_time_s=round(num("entire_frame_compile_time_s"), 6),
        backend_compile_time_s=round(num("backend_compile_time_s"), 6),
        inductor_compile_time_s=round(num("inductor_compile_time_s"), 6),
        code_gen_time_s=round(num("code_gen_time_s"), 6),
        guard_count=int(m.get("guard_count") or 0),
        graph_op_count=int(m.get("graph_op_count") or 0),
        aot_autograd_cache=aot_cache,
        fail_type=str(m.get("fail_type") or ""),
        fail_reason=str(m.get("fail_reason") or ""),
    )


def clean_reason(reason: str) -> str:
    """A failed guard as PyTorch reports it, without the padding and the 'User stack trace' tail."""
    first = reason.split("\nUser stack trace:", 1)[0].strip()
    first = re.sub(r"\s+#\s+#?\s*", "  # ", first)
    return re.sub(r"[ \t]{2,}(?!#)", " ", first).strip()


def _recompile_reasons(all_events: list[Event]) -> dict[str, tuple[str, ...]]:
    """recompile_reasons artifacts, by the compile id they were logged under.

    torch (2.11-2.15) logs them inside the new compile's context; one logged outside any
    compile (older versions) goes to the next compile of an already-compiled frame.
    """
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for e in all_events:
        if e.name == "recompile_reasons":
            # one reason arrives as a bare string, several as a JSON list (guards.py, 2.11-2.15)
            data = ev_mod.json_payload(e)
            if data is None and e.payload.strip():
                data = e.payload
            items = [str(d) for d in data] if isinstance(data, list) else ([str(data)] if data is not None else [])
            items = [clean_reason(r) for r in items]
            if e.compile_id:
                out.setdefault(e.compile_id, []).extend(items)
            else:
                pending.extend(items)
        elif e.name == "dynamo_start" and (e.frame_compile_id or 0) > 0 and pending:
            out.setdefault(e.compile_id, []).extend(pending)
            pending = []
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


@memoized
def _reanchor(graph: Graph, anchors: Optional[Graph]) -> Graph:
    """Point node sources at this run's user code.

    AOTAutograd and FX graph cache hits return graphs from the compile that filled the cache,
    whose "# File:" comments name that compile's file and lines (the cache key ignores source
    locations). Dynamo's graph is always traced afresh, so a node whose location is not among
    Dynamo's is matched to Dynamo's node with the same line of code.
    """
    if anchors is None:
        return graph
    here = {(n.source.file, n.source.line) for n in anchors.nodes if n.source is not None}
    by_code: dict[str, set[SourceLocation]] = {}
    for n in anchors.nodes:
        if n.source is not None:
            by_code.setdefault(n.source.code, set()).add(n.source)
    nodes, changed = [], False
    for n in graph.nodes:
        src = n.source
        if src is not None and (src.file, src.line) not in here and len(by_code.get(src.code, ())) == 1:
            n = replace(n, source=next(iter(by_code[src.code])))
            changed = True
        nodes.append(n)
    return replace(graph, nodes=tuple(nodes)) if changed else graph


_PROVENANCE_EVENTS = (provenance.NODE_MAPPINGS, provenance.STACK_TRACES, provenance.OWN)
#: torch._inductor.debug.log_collective_schedule: a JSON list of each collective's op name (None for one it
#: cannot name), logged only for a graph with collectives
COLLECTIVE_SCHEDULE = "inductor_collective_schedule"


def collective_schedule(payload: str) -> tuple[str, ...]:
    """The op names of an inductor_collective_schedule payload ("?" for one torch could not name)."""
    try:
        items = json.loads(payload)
    except ValueError:
        return ()
    return tuple(str(x) if x is not None else "?" for x in items) if isinstance(items, list) else ()


#: the post-grad graph after Inductor's passes: ``after_post_grad_graph`` is its name on an FX graph cache miss in
#: torch's nightlies of 2025 (tlparse's corpus), where a hit logged ``inductor_post_grad_graph`` as now
POST_GRAD_GRAPHS = ("inductor_post_grad_graph", "after_post_grad_graph")
#: the events Inductor's outputs of a compile are read from (besides fx_graph_cache_*, read by name)
_OUTPUT_EVENTS = frozenset({COLLECTIVE_SCHEDULE, "inductor_output_code", POST_TO_PRE_GRAD_NODES, *POST_GRAD_GRAPHS,
                            *_PROVENANCE_EVENTS})


def _inductor_outputs(cid: str, events: list[Event], anchors: Optional[Graph]) -> tuple[OutputCode, ...]:
    """A compile's Inductor outputs, from the names and payloads of its events (``_outputs``)."""
    return _outputs(cid, tuple((e.name, e.payload) if e.name in _OUTPUT_EVENTS else (e.name, "") for e in events
                               if e.name in _OUTPUT_EVENTS or e.name.startswith("fx_graph_cache_")), anchors)


@memoized
def _outputs(cid: str, records: tuple[tuple[str, str], ...], anchors: Optional[Graph]) -> tuple[OutputCode, ...]:
    """Inductor's outputs of compile ``cid`` from its records' (name, payload) in order: ranks that compiled alike
    log the same payloads (one text each, parse/tracelog.py), so a process reading several builds them once."""
    outputs: list[OutputCode] = []
    statements: list[provenance.Statement] = []
    post_grad: Optional[Graph] = None
    pre_of_post: dict[str, list[str]] = {}  # older torch's inductor_post_to_pre_grad_nodes, before the output code
    caches = [name.rsplit("_", 1)[-1] for name, _ in records if name.startswith("fx_graph_cache_")]
    for name, payload in records:
        if name == COLLECTIVE_SCHEDULE and outputs:  # logged after the output code it describes (compile_fx.py)
            outputs[-1] = replace(outputs[-1], collective_schedule=collective_schedule(payload))
        elif name in POST_GRAD_GRAPHS:
            post_grad = _reanchor(parse_graph(name, _clean(payload)), anchors)
        elif name == POST_TO_PRE_GRAD_NODES:
            pre_of_post = post_to_pre(payload)
        elif name == "inductor_output_code":
            wrapper = _clean(payload)
            aot_id = aot_id_of(wrapper)
            cache = caches[len(outputs)] if len(outputs) < len(caches) else ""
            outputs.append(OutputCode(compile_id=cid, aot_id=aot_id, part=part_of(aot_id), wrapper=wrapper,
                                      kernels=parse_output_code(wrapper, post_grad, anchors), post_grad_graph=post_grad,
                                      cache=cache))
            # the node mapping's postToPre, logged after the output code, replaces what it names
            statements.append(provenance.Statement(post_to_pre=pre_of_post))
            post_grad, pre_of_post = None, {}
        elif name in _PROVENANCE_EVENTS and statements:
            # logged after the output code they describe (compile_fx.py and codecache.py, 2.11-2.15)
            provenance.add_event(statements[-1], name, payload)
    return tuple(_with_provenance(o, st) for o, st in zip(outputs, statements))


def _with_provenance(o: OutputCode, st: provenance.Statement) -> OutputCode:
    """``o`` with each kernel's stated provenance, and why where some have none."""
    kernels = provenance.apply(o.kernels, st, o.post_grad_graph)
    unknown = any(k.provenance == provenance.UNKNOWN for k in kernels)
    return replace(o, kernels=kernels, unknown_provenance=provenance.unknown_reason(o.cache, st) if unknown else "")


_WRAPPER_CALL = re.compile(
    r"^\s*(?P<node>\w+)(?:\s*:\s*\"[^\"]*\")?\s*=\s*torch\.ops\.higher_order\.(?P<wrapper>triton_kernel_wrapper_\w+)\((?P<args>.*)\)"
)
_CUSTOM_OP = re.compile(r"torch\.ops\.(?P<ns>\w+)\.(?P<op>\w+)")
#: Operator namespaces of PyTorch itself; any other torch.ops namespace is a user's custom op.
_TORCH_NAMESPACES = frozenset({"aten", "prims", "higher_order", "_c10d_functional", "c10d_functional", "c10d",
                               "_c10d_functional_autograd", "profiler", "inductor", "quantized", "_quantized",
                               "rngprims", "_dtensor", "debugprims", "fsdp", "streams"})


def _user_kernel_calls(cid: str, part: str, graph: Graph, side_table: SideTable) -> list[UserKernel]:
    kernels, constants = side_table
    found: list[UserKernel] = []
    if "triton_kernel_wrapper_" not in graph.code:  # no call _WRAPPER_CALL matches (most graphs)
        return found
    for line in graph.code.splitlines():
        m = _WRAPPER_CALL.match(line)
        if m is None:
            continue
        args = m["args"]
        idx = re.search(r"kernel_idx = (\d+)", args)
        cidx = re.search(r"constant_args_idx = (\d+)", args)
        grid = re.search(r"grid = (\[.*?\])(?:, \w+ = |$)", args)
        kwargs = re.search(r"kwargs = \{(.*?)\}(?:, \w+ = |$)", args)
        clone = re.search(r"tensors_to_clone = \[(.*?)\]", args)
        tensor_args = []
        for key, value in re.findall(r"'(\w+)': ([^,]+)", kwargs.group(1) if kwargs else ""):
            value = value.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", value) and value not in ("None", "True", "False"):
                tensor_args.append(f"{key}={value}")
        kernel_idx = int(idx.group(1)) if idx else -1
        name, source = kernels.get(kernel_idx, ("", ""))
        mutated = tuple(re.findall(r"'(\w+)'", clone.group(1))) if clone else ()
        if not mutated and m["wrapper"].endswith("_mutation"):
            mutated = tuple(a.split("=", 1)[0] for a in tensor_args)  # the mutation form writes in place
        found.append(UserKernel(
            compile_id=cid, graph=part, node=m["node"], wrapper=m["wrapper"], kernel_idx=kernel_idx, name=name,
            grid=grid.group(1) if grid else "", tensor_args=tuple(tensor_args), mutated=mutated,
            constant_args=constants.get(int(cidx.group(1)), "") if cidx else "", source=source))
    return found


@memoized
def _custom_op_names(code: str) -> tuple[str, ...]:
    """The ops of namespaces other than PyTorch's that a Dynamo graph's code calls (``ns.op``), first call first."""
    return tuple(dict.fromkeys(f"{m['ns']}.{m['op']}" for m in _CUSTOM_OP.finditer(code)
                               if m["ns"] not in _TORCH_NAMESPACES))


def _custom_ops(dynamo_graphs: list[DynamoGraph], aot_graphs: list[AotGraphs],
                user_kernels: list[UserKernel]) -> tuple[CustomOp, ...]:
    """Each custom op in the Dynamo graphs, and whether AOTAutograd kept it whole or saw inside."""
    names: dict[str, None] = {}
    traced = []
    for dg in dynamo_graphs:
        names.update(dict.fromkeys(_custom_op_names(dg.graph.code)))
        if "triton_kernel_wrapper_mutation" in dg.graph.code:
            traced.append(dg.compile_id)
    if not names and not traced:
        return ()
    aot_code = "\n".join(line for g in aot_graphs for part in (g.joint, g.forward, g.backward, g.inference)
                         if part is not None for line in part.code.splitlines()
                         if not line.lstrip().startswith("#"))  # "# File:" comments quote the user's call
    ops = []
    kernel_names = sorted({k.name or f"kernel_idx {k.kernel_idx}" for k in user_kernels})
    for name in names:
        if re.search(rf"torch\.ops\.{re.escape(name)}\b", aot_code):
            ops.append(CustomOp(name, "opaque", "kept as one call through AOTAutograd (custom_op with a fake "
                                                "implementation): the compiler cannot fuse into it"))
        elif user_kernels:
            ops.append(CustomOp(name, "transparent", "decomposed into its Triton kernel(s) "
                                                     f"{', '.join(kernel_names)} (triton_op + wrap_triton)"))
        elif aot_graphs:
            ops.append(CustomOp(name, "transparent", "decomposed into ATen ops by AOTAutograd"))
    for cid in traced:
        ops.append(CustomOp(f"@triton.jit call in graph {cid}", "transparent",
                            "a plain Triton kernel call that Dynamo traced (triton_kernel_wrapper_mutation)"))
    return tuple(ops)


def _checked_names(kernels: list[UserKernel], outputs: list[OutputCode],
                   metrics: list[CompileMetrics]) -> list[UserKernel]:
    """User kernels named by what Inductor launched where the side table cannot be trusted.

    The side table is this process's: a graph that came from the AOTAutograd cache (or a recorded
    trace) holds kernel_idx values of the process that filled the cache, which may name nothing here,
    or another kernel. Inductor's wrapper names each user kernel it launches (``relu_kernel_0`` for
    ``relu_kernel``), in the graph's order; those names win when the two disagree.
    """
    from_cache = {m.compile_id for m in metrics if m.aot_autograd_cache == "hit"}
    launched: dict[tuple[str, str], list[Kernel]] = {}
    for o in outputs:
        launched.setdefault((o.compile_id, o.part), []).extend(k for k in o.kernels if k.kind == "user_triton")
    seen: dict[tuple[str, str], int] = {}
    out = []
    for k in kernels:
        key = (k.compile_id, k.graph)
        i = seen.get(key, 0)
        seen[key] = i + 1
        ran = launched.get(key, [])
        if i < len(ran):
            name = re.sub(r"_\d+$", "", ran[i].name)
            if k.name != name or k.compile_id in from_cache:
                k = replace(k, name=name, source=ran[i].source or (k.source if k.name == name else ""),
                            constant_args=k.constant_args if k.name == name and k.compile_id not in from_cache else "")
        elif k.compile_id in from_cache:
            k = replace(k, name="", source="", constant_args="")  # an index into another process's table
        out.append(k)
    return out


def build_passes(events: Iterable[Event]) -> tuple[PassRun, ...]:
    """What each --pass did to each ATen graph, from tcinspect's own trace artifacts."""
    runs = []
    for e in events:
        if e.name != PASS_ARTIFACT:
            continue
        data = ev_mod.json_payload(e) or {}
        runs.append(PassRun(
            name=str(data.get("name", "")), compile_id=e.compile_id, graph=str(data.get("graph", "")),
            nodes_before=int(data.get("nodes_before", 0)), nodes_after=int(data.get("nodes_after", 0)),
            changes=tuple(NodeChange(*c) for c in data.get("changes", [])), lint=str(data.get("lint", "ok")),
            error=str(data.get("error", "")), decomposed=tuple(str(op) for op in data.get("decomposed", ()))))
    return tuple(runs)


#: kernel_idx -> (name, source); constant_args_idx -> text (PyTorch's kernel side table, read live).
SideTable = tuple[dict[int, tuple[str, str]], dict[int, str]]


def build(
    events: Iterable[Event],
    *,
    backend: str = "inductor",
    failure: Optional[StageFailure] = None,
    side_table: Optional[SideTable] = None,
    backward_ran: bool = True,
) -> tuple[Stages, tuple[CompileMetrics, ...]]:
    """Assemble the three stages and per-compile metrics from a run's events.

    ``backward_ran``: False when the run called no backward (a model captured with --no-backward).
    """
    if side_table is None:
        side_table = ({}, {})
    all_events = list(events)
    groups = ev_mod.by_compile_id(all_events)
    reasons = _recompile_reasons(all_events)

    dynamo_graphs, breaks, recompiles, aot_graphs, metrics = [], [], [], [], []
    outputs: list[OutputCode] = []
    backend_failures: list[BackendFailure] = []
    user_kernels: list[UserKernel] = []
    for cid, group in groups.items():
        frame = _metrics(cid, group)
        for e in group:
            if e.name == "dynamo_graph_break_reason":
                if is_backend_failure(e.payload):
                    backend_failures.append(parse_backend_failure(e.payload, cid))
                else:
                    breaks.append(parse_break(e.payload, cid, (frame.file, frame.function)))
        latest = _latest_attempt(group)
        graph_ev = next((e for e in reversed(latest) if e.name == "dynamo_output_graph"), None)
        # the backend failed on the graph of this attempt: Dynamo then ran the frame eagerly
        failed_ev = next((e for e in latest if e.name == "dynamo_graph_break_reason" and is_backend_failure(e.payload)
                          and graph_ev is not None and latest.index(e) > latest.index(graph_ev)), None)
        guard_ev = next((e for e in reversed(latest) if e.name == "dynamo_cpp_guards_str"), None)
        guards = parse_guards(guard_ev.payload) if guard_ev is not None else ()
        # a guard is a leaf of the guard tree Dynamo installed (docs/trace.md "What each count means"), not
        # compilation_metrics' guard_count (Dynamo's guard objects before the tree is built)
        m = replace(_metrics(cid, group), guard_count=len(guards))
        metrics.append(m)
        anchors = parse_graph("dynamo_output_graph", _clean(graph_ev.payload)) if graph_ev is not None else None
        inputs_ev = next((e for e in reversed(latest) if e.name == BACKEND_INPUTS_ARTIFACT), None)
        if anchors is not None:
            dynamo_graphs.append(DynamoGraph(
                compile_id=cid, function=m.function, file=m.file, line=m.line, graph=anchors,
                guards=guards,
                example_inputs=tuple(str(v) for v in (ev_mod.json_payload(inputs_ev) or [])) if inputs_ev else (),
                backend_error=parse_backend_failure(failed_ev.payload, cid).error or "the backend failed"
                if failed_ev is not None else "",
            ))
        if cid in reasons or (group[0].frame_compile_id or 0) > 0:
            why = reasons.get(cid, ())
            recompiles.append(Recompile(
                compile_id=cid, function=m.function, reasons=why,
                input_set=next((e.call for e in group if e.call >= 0), -1),
                limit_hit="recompile limit" in m.fail_reason.lower(),
                suggestion=suggest_recompile_fix(why)))
        # one compile id can hold several AOT graph sets (DDPOptimizer compiles each bucket's submodule
        # under its frame's compile id); backwards arrive later, in reverse, each for the latest
        # forward still without one
        sets: list[dict[str, Graph]] = []
        for e in latest:
            if e.name not in _AOT_EVENTS:
                continue
            part, graph = _AOT_EVENTS[e.name], _reanchor(parse_graph(e.name, _clean(e.payload)), anchors)
            if part == "backward":
                target = next((s for s in reversed(sets) if "backward" not in s and "inference" not in s), None)
                if target is None:
                    target = {}
                    sets.append(target)
                target[part] = graph
            else:
                if not sets or part in sets[-1] or "backward" in sets[-1]:
                    sets.append({})
                sets[-1][part] = graph
        for parts in sets:
            fwd, bwd = parts.get("forward"), parts.get("backward")
            if fwd is not None and not fwd.saved_for_backward and bwd is not None:
                # older torch prints no SavedForBackwardsAOTOutput marks: the backward's non-tangent
                # inputs are what the forward saved
                saved = tuple(n.name for n in bwd.nodes if n.op == "placeholder" and not n.name.startswith("tangents"))
                parts["forward"] = Graph(fwd.name, fwd.code, fwd.nodes, saved)
            aot_graphs.append(AotGraphs(compile_id=cid, **parts))
            for part_name, graph in parts.items():
                if part_name != "joint":  # the joint graph repeats the forward's calls
                    user_kernels.extend(_user_kernel_calls(cid, part_name, graph, side_table))
        compiled = _inductor_outputs(cid, latest, anchors)
        if not backward_ran and m.aot_autograd_cache == "hit":
            # an AOTAutograd cache hit loads the entry's backward with its forward and logs its output
            # code (torch 2.11-2.15), yet no backward ran: a compile without the cache writes none
            compiled = tuple(o for o in compiled if o.part != "backward")
        outputs.extend(compiled)

    # a backend tcinspect does not know runs the stages it left records of (a custom backend that
    # hands on to compile_fx shows AOT and Inductor; one that runs the graph itself shows Dynamo only)
    runs = BACKEND_STAGES.get(backend) or ("dynamo",) + (("aot_autograd",) if aot_graphs else ()) + (
        ("inductor",) if outputs else ())
    has_any = bool(groups)

    def status(stage: str, produced: bool) -> tuple[str, str]:
        if failure is not None and failure.stage == stage:
            return FAILED, failure.message
        if failure is not None and _after(stage, failure.stage):
            return NOT_RUN, f"not reached: the {failure.stage} stage failed"
        if stage not in runs:
            return NOT_RUN, f"not run by backend '{backend}'"
        if stage != "dynamo" and not produced and has_any:
            return NOT_RUN, "no graph reached this stage"
        return (OK, "") if (has_any or stage == "dynamo") else (NOT_RUN, "nothing was compiled")

    d_status, d_err = status("dynamo", bool(dynamo_graphs))
    a_status, a_err = status("aot_autograd", bool(aot_graphs))
    i_status, i_err = status("inductor", bool(outputs))
    stages = Stages(
        dynamo=DynamoStage(status=d_status, error=d_err, graphs=tuple(dynamo_graphs), graph_breaks=tuple(breaks),
                           recompiles=tuple(recompiles), backend_failures=tuple(backend_failures)),
        aot_autograd=AotStage(status=a_status, error=a_err, graphs=tuple(aot_graphs),
                              user_kernels=tuple(user_kernels := _checked_names(user_kernels, outputs, metrics)),
                              custom_ops=_custom_ops(dynamo_graphs, aot_graphs, user_kernels)),
        inductor=InductorStage(status=i_status, error=i_err, outputs=tuple(outputs)),
    )
    return stages, tuple(metrics)


_ORDER = ("dynamo", "aot_autograd", "inductor")


def _after(stage: str, failed: str) -> bool:
    return failed in _ORDER and stage in _ORDER and _ORDER.index(stage) > _ORDER.index(failed)


#: fail_type values of a frame Dynamo gave up on gracefully (graph break it cannot resume from,
#: recompile limit, skipped frame): the code ran eagerly, as designed, so nothing failed.
GRACEFUL = frozenset({"Unsupported", "SkipFrame", "RecompileLimitExceeded", "ResumePrologueTracingError",
                      "UncapturedHigherOrderOpError", "ObservedException"})


def failure_from_metrics(metrics: Iterable[CompileMetrics], stages: Stages) -> Optional[StageFailure]:
    """A failed compile recorded in compilation_metrics, attributed to the stage that failed."""
    for m in metrics:
        if not m.fail_type or m.fail_type.rsplit(".", 1)[-1] in GRACEFUL:
            continue
        has_aot = any(g.compile_id == m.compile_id for g in stages.aot_autograd.graphs)
        stage = "inductor" if has_aot else ("aot_autograd" if "Backend" in m.fail_type else "dynamo")
        return StageFailure(stage, f"{m.fail_type}: {m.fail_reason.strip().splitlines()[0] if m.fail_reason else ''}".strip())
    return None


def passes_section(run: RunEvents) -> tuple[PassRun, ...]:
    """The report's section of the user's FX passes, as each logged what it changed, from a run (report/sections.py registers it)."""
    return build_passes(run.events)
