"""Where compiled results first depart from eager (``tcinspect verify``, on a mismatch).

Two searches, cheapest first, within a time budget:

1. **Node by node.** The model compiles again with a recording backend: AOTAutograd under ``aot_eager`` with the
   user's ``--pass`` pipeline (or, for ``--backend module:fn``, the user's backend on the Dynamo graph). For each
   graph it keeps a copy of the graph as it came (before the passes or the backend), the graph as it went on, and
   the real inputs of its first call. Then each graph runs node by node with ``torch.fx.Interpreter``: the graph
   as it came, in the inputs' dtypes (eager's semantics) and in float64 (the truth), and the graph as it went on
   (compiled's). Every node present in both is judged by verify's own rule (``verify.check``); the first node
   past it, in the order the graphs ran (forward before backward), is where results depart. A node the pass
   added or removed shows there as the changed input of that node, and is named instead.
2. **Backend stage.** If no node departs, the cause is a compiler stage: the model is compiled under ``aot_eager``,
   ``aot_eager_decomp_partition`` and ``inductor`` in turn (up to the backend asked for) and compared with eager;
   the first stage that fails is named.
3. **torch's CompilerBisector.** Where that stage has subsystems (``aot_eager_decomp_partition``, ``inductor``),
   ``torch._inductor.compiler_bisector.CompilerBisector`` runs the same comparison over and over: it disables the
   stage's subsystems one by one (its passes, config changes, lowerings) and bisects the applications of the one
   whose disabling fixes it. Its answer (subsystem, bisect number, debug info) is kept as torch gives it; a
   lowering it names is placed at that node's user line, from the graphs of step 1.

Each run is one ``LocateStep`` (what ran, its verdict, seconds); the search stops when the budget is spent,
keeping what it found. It runs in the capture's own process (the isolated child, which ``--timeout`` bounds), after
the record: none of its compiles is part of the report.
"""

from __future__ import annotations

import copy
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing import _compat, custom, modelfile, outputs, verify
from tcinspect.report import FirstDivergence, LocateStep, Options, Report, Request, VerifyRequest

#: seconds the search may take in all (``--locate-budget``)
DEFAULT_BUDGET_S = 120.0
#: backend stages bisected, in order (each adds one step to the one before)
STAGES = ("aot_eager", "aot_eager_decomp_partition", "inductor")

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class _Graph:
    """One graph the recording backend saw: as it came, as it went on, and its first call's inputs."""

    name: str
    before: Any
    after: Any
    inputs: Optional[tuple[Any, ...]] = None


@dataclass
class _Search:
    budget_s: float
    start: float = field(default_factory=time.perf_counter)
    steps: list[LocateStep] = field(default_factory=list)

    def left(self) -> float:
        return self.budget_s - (time.perf_counter() - self.start)

    def add(self, what: str, ok: bool, began: float, detail: str = "") -> None:
        self.steps.append(LocateStep(what, ok, round(time.perf_counter() - began, 3), detail))


def locate(request: Request, budget_s: float = DEFAULT_BUDGET_S) -> FirstDivergence:
    """Where the compiled model of ``request`` (a model file, with its compile options) first departs from eager."""
    return locate_file(request.file or "", request.model, request.inputs_name, request.options, budget_s)


def locate_file(path: str | Path, model_name: str, inputs_name: str, options: Options,
                budget_s: float = DEFAULT_BUDGET_S, source: Optional[modelfile.ModelSource] = None) -> FirstDivergence:
    """Where the model ``model_name`` of the model file ``path``, compiled with ``options``, first departs from
    eager, on the first of its inputs (``source``: the file as the capture read it)."""
    src = source or modelfile.read(path, model_name)
    if src.is_script:
        return FirstDivergence(note="a script's own torch.compile calls cannot be re-run node by node")
    home = str(Path(src.path).resolve().parent)
    sys.path.insert(0, home)  # the model file's own imports, as the capture finds them
    try:
        loaded = modelfile.load(src, model_name, inputs_name, options.device)
        inputs = loaded.calls()[0]
        model: Any = loaded.model
        if options.device:
            if callable(getattr(model, "to", None)):
                model = model.to(options.device)
            inputs = modelfile.move(inputs, options.device)
        return locate_model(model, inputs, options.backend, options.passes,
                            options.verify_request or VerifyRequest(), options.backward, budget_s)
    finally:
        modelfile.unload(src)
        if home in sys.path:
            sys.path.remove(home)


def attach_file(rep: Report, path: str | Path, model_name: str, inputs_name: str, options: Options,
                budget_s: float = DEFAULT_BUDGET_S, source: Optional[modelfile.ModelSource] = None) -> Report:
    """``rep`` with its verification's ``first_divergence`` filled in (unchanged when the verification passed): the
    model file's, captured with ``options`` (what the capture itself calls)."""
    v = rep.verification
    if v is None or v.ok:
        return rep
    found = locate_file(path, model_name, inputs_name, options, budget_s, source)
    return replace(rep, verification=replace(v, first_divergence=found))


def locate_model(model: Any, inputs: modelfile.Call, backend: str, passes: Sequence[str],
                 request: VerifyRequest, backward: bool = True,
                 budget_s: float = DEFAULT_BUDGET_S) -> FirstDivergence:
    """Where ``torch.compile(model, backend=backend)`` with ``passes`` first departs from eager on ``inputs``."""
    search = _Search(budget_s)

    def step(fn: Callable[..., Any], call: modelfile.Call) -> Any:
        out = call(fn)
        if backward:
            loss = outputs.scalar_loss(out)
            if loss is not None:
                loss.backward()
        return out

    names = _compat.provenance.module_names(model)
    custom_target = custom.is_target(backend)
    graphs: list[_Graph] = []
    if custom_target or backend in ("aot_eager", "inductor") or passes:
        began = time.perf_counter()
        what = f"{backend} on each Dynamo graph, node by node" if custom_target else \
            "aot_eager" + "".join(f" --pass {p}" for p in passes) + " on each AOT graph, node by node"
        graphs = _record(model, inputs, backend, passes, step)
        found, detail = _first_node(graphs, request, names, search)
        if found is None and search.left() <= 0:
            search.add(what + " (stopped)", True, began, detail)
            return _done(search, FirstDivergence(), stopped=True)
        search.add(what, found is None, began, detail)
        if found is not None:
            return _done(search, found)
        if custom_target:
            return _done(search, FirstDivergence(stage=backend, note="no node of the graphs it was handed departs: "
                                                 "the backend's own compiled code does"))
    ref = verify.reference(_copy(model), verify._clone(inputs), step, None)
    stages = list(STAGES[:STAGES.index(backend) + 1]) if backend in STAGES else [*STAGES[:2], backend]
    for stage in stages:
        if search.left() <= 0:
            return _done(search, FirstDivergence(), stopped=True)
        began = time.perf_counter()
        twin, call = _copy(model), verify._clone(inputs)
        with_passes = stage in custom.PASS_BACKENDS and bool(passes)
        compiled_with, _ = custom.build_backend(stage, passes if with_passes else ())
        _compat.dynamo.reset_dynamo()
        try:
            out = step(_compat.dynamo.compile_fn(twin, backend=compiled_with), call)
            v = verify.compare(ref, out, call, twin, request)
        finally:
            _compat.dynamo.reset_dynamo()
        bad = [c.name for c in v.tensors if not c.ok]
        search.add(stage + ("".join(f" --pass {p}" for p in passes) if with_passes else ""), v.ok, began,
                   v.error or (f"{', '.join(bad)} mismatched" if bad else "matches eager"))
        if not v.ok:
            found = FirstDivergence(stage=stage, note=f"first failing stage: {stage}")
            if stage in BISECTED:
                found = _bisect(found, model, inputs, ref, step, request, passes, search, graphs, names)
            return _done(search, found)
    return _done(search, FirstDivergence(note="no stage departs when compiled again"))


#: the stages torch's CompilerBisector has subsystems for (torch/_inductor/compiler_bisector.py: BACKENDS)
BISECTED = ("aot_eager_decomp_partition", "inductor")


class _Spent(Exception):
    """The time budget ran out in the middle of the bisector's runs."""


def _bisect(found: FirstDivergence, model: Any, inputs: modelfile.Call, ref: Any,
            step: Callable[[Any, modelfile.Call], Any], request: VerifyRequest, passes: Sequence[str],
            search: _Search, graphs: Sequence[_Graph], names: dict[str, str]) -> FirstDivergence:
    """``found`` (a failing stage) with what torch's CompilerBisector says introduces it."""
    if search.left() <= 0:
        return found
    began = time.perf_counter()
    runs: list[bool] = []
    # the user's passes run under the bisector's inductor runs where torch can keep a custom backend
    compiled_with, _ = custom.build_backend("inductor", passes) if passes else ("inductor", None)

    def run() -> bool:
        if search.left() <= 0:
            raise _Spent
        twin, call = _copy(model), verify._clone(inputs)
        _compat.dynamo.reset_dynamo()
        try:
            ok = verify.compare(ref, step(_compat.dynamo.compile_fn(twin, backend=compiled_with), call), call, twin,
                                request).ok
        except Exception:  # noqa: BLE001 - a run that raises under what the bisector disabled fails, as in torch's tests
            ok = False
        finally:
            _compat.dynamo.reset_dynamo()
        runs.append(ok)
        return ok

    what = "torch's CompilerBisector (its backends, then the failing one's subsystems)"
    try:
        result = _compat.bisector.compiler_bisect(run, keep_custom_backend=bool(passes))
    except _Spent:
        search.add(what + " (stopped)", False, began, f"{len(runs)} runs before the time budget was spent")
        return found
    if result is None:
        search.add(what, True, began, f"{len(runs)} runs: every backend matched eager when the bisector ran it")
        return replace(found, note=found.note + "; torch's CompilerBisector found no backend that fails")
    said = _bisected(result)
    search.add(what, False, began, f"{len(runs)} runs: {said}")
    found = replace(found, subsystem=result.subsystem, bisect_number=result.bisect_number,
                    debug_info=result.debug_info, note=f"first failing stage: {found.stage}; torch's "
                    f"CompilerBisector: {said}")
    if result.backend != found.stage:
        found = replace(found, note=found.note + f" (the bisector's first failing backend is {result.backend})")
    if result.subsystem == "lowerings" and result.debug_info:
        # torch's debug info for a lowering is the node lowered (repr(node)): the graphs' node of that name
        for g in graphs:
            node = next((n for n in g.after.graph.nodes if n.name == result.debug_info), None)
            if node is not None:
                return replace(found, graph=g.name, node=node.name, op=_op(node), line=_line(node),
                               module=_compat.provenance.module_path(node.meta.get("nn_module_stack"), names))
    return found


def _bisected(b: _compat.bisector.Bisection) -> str:
    """torch's CompilerBisector's answer in words."""
    if not b.subsystem:
        return f"the issue is in {b.backend}, in no subsystem it can disable"
    if b.config_change:
        return f"{b.backend}: {b.config_change} makes it match (subsystem {b.subsystem})"
    return (f"{b.backend}: disabling {b.subsystem} fixes it; application {b.bisect_number} of it is the first "
            f"that fails" + (f" ({b.debug_info})" if b.debug_info else ""))


def _done(search: _Search, found: FirstDivergence, stopped: bool = False) -> FirstDivergence:
    stopped = stopped or search.left() <= 0
    return replace(found, steps=tuple(search.steps), seconds=round(time.perf_counter() - search.start, 3),
                   stopped=f"time budget of {search.budget_s:g} s spent" if stopped and not found.node else "")


def _copy(model: Any) -> Any:
    try:
        return copy.deepcopy(model)
    except Exception:  # noqa: BLE001 - a function, or a module holding something uncopyable: the model itself
        return model


def _record(model: Any, inputs: modelfile.Call, backend: str, passes: Sequence[str],
            step: Callable[[Any, modelfile.Call], Any]) -> list[_Graph]:
    """Compile and run the model once with a backend that keeps every graph (as it came and as it went on)."""
    graphs: list[_Graph] = []

    def keep(name: str, before: Any, after: Any, run: Callable[..., Any]) -> Callable[..., Any]:
        g = _Graph(name, before, after)
        graphs.append(g)

        def call(*args: Any) -> Any:
            if g.inputs is None:
                g.inputs = tuple(verify._clone(a) for a in args)
            return run(*args)
        return call

    if custom.is_target(backend):
        user = custom.load_callable(backend, "--backend")

        def dynamo_backend(gm: Any, example_inputs: Any) -> Any:
            before = copy.deepcopy(gm)
            compiled = user(gm, example_inputs)
            return keep(f"dynamo_output_graph {len(graphs)}", before, gm, compiled)
        compiled_with: Any = dynamo_backend
    else:
        pipeline = custom.pass_pipeline([(p, custom.load_callable(p, "--pass")) for p in passes]) if passes else None
        count = {"forward": 0, "backward": 0, "inference": 0}

        def inner(gm: Any, part: str) -> Any:
            before = copy.deepcopy(gm)
            after = pipeline(gm, part) if pipeline is not None else gm
            index = count[part]
            count[part] += 1
            return keep(f"aot_{part}_graph {index}", before, after, after)
        compiled_with = _compat.backends.aot_eager_with_inner(inner)
    _compat.dynamo.reset_dynamo()
    try:
        step(_compat.dynamo.compile_fn(_copy(model), backend=compiled_with), verify._clone(inputs))
    finally:
        _compat.dynamo.reset_dynamo()
    return graphs


def _values(gm: Any, args: Sequence[Any]) -> dict[str, Any]:
    """Every node's output when ``gm`` runs on ``args`` node by node, by node name."""
    import torch.fx

    seen: dict[str, Any] = {}

    class Recording(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            seen[n.name] = out
            return out

    Recording(gm, garbage_collect_values=False).run(*args)
    return seen


def _tensors(value: Any, name: str) -> list[tuple[str, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [t for i, v in enumerate(value) for t in _tensors(v, f"{name}[{i}]")]
    return []


def _first_node(graphs: Sequence[_Graph], request: VerifyRequest, names: dict[str, str],
                search: _Search) -> tuple[Optional[FirstDivergence], str]:
    """The first node, in the order the graphs ran, whose output departs by verify's rule."""
    import torch

    ran = [g for g in graphs if g.inputs is not None]
    for g in ran:
        if search.left() <= 0:
            return None, f"time budget spent after {ran.index(g)} of {len(ran)} graphs"
        assert g.inputs is not None
        with torch.no_grad():
            eager = _values(g.before, verify._clone(g.inputs))
            compiled = _values(g.after, verify._clone(g.inputs))
            try:
                truth = _values(g.before, verify._widen(g.inputs))
            except Exception:  # noqa: BLE001 - no float64 run of this graph: the dtype tolerances alone decide
                truth = {}
        before = {n.name: n for n in g.before.graph.nodes}
        for n in g.after.graph.nodes:
            if n.op in ("placeholder", "output") or n.name not in eager or n.name not in compiled:
                continue
            theirs = dict(_tensors(eager[n.name], n.name))
            wide = dict(_tensors(truth.get(n.name), n.name))
            for name, t in _tensors(compiled[n.name], n.name):
                expected = theirs.get(name)
                if expected is None:
                    continue
                c = verify.check(name, t, expected, request, wide.get(name))
                if c.ok:
                    continue
                rmse = c.fp64_rmse
                if not rmse and t.shape == expected.shape and t.dtype == expected.dtype:
                    rmse = verify._rmse(t.detach().cpu(), expected.detach().cpu())
                where, note = _cause(n, before)
                return FirstDivergence(graph=g.name, node=where.name, op=_op(where), line=_line(where),
                                       module=_compat.provenance.module_path(where.meta.get("nn_module_stack"), names),
                                       max_abs=c.max_abs_error, rmse=rmse, note=note), \
                    f"{name} in {g.name} departs"
    return None, f"{len(ran)} graphs, no node departs"


def _cause(n: Any, before: dict[str, Any]) -> tuple[Any, str]:
    """The node to name for departing node ``n``: itself, or an input the pass added or removed."""
    was = [i.name for i in before[n.name].all_input_nodes]
    now = [i.name for i in n.all_input_nodes]
    added = [i for i in n.all_input_nodes if i.name not in before]
    if added:
        return added[0], f"added by the pass or backend; {n.name} reads it and departs"
    removed = [before[w] for w in was if w not in now]
    gone = [r for r in removed if r.name not in {x.name for x in n.graph.nodes}]
    if gone:
        return gone[0], f"removed by the pass or backend; {n.name} read it and departs"
    return n, ""


def _op(n: Any) -> str:
    target = n.target
    if n.op == "call_function":
        return str(target) if "OpOverload" in type(target).__name__ else getattr(target, "__name__", str(target))
    return f"{n.op} {target}"


def _line(n: Any) -> str:
    """FILE:LINE of the innermost user frame of the node's stack trace (relative to the working directory)."""
    frames = _FRAME.findall(n.meta.get("stack_trace") or "")
    if not frames:
        return ""
    file, line = frames[-1]
    try:
        file = str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return f"{file}:{line}"

