"""Runtime coverage: of the ATen ops one more call of the compiled model runs, which ran in compiled regions and
which ran eagerly, by the user line that ran them (parse/coverage.py reads the record).

The call is made after the capture's own calls (nothing recorded changes), as they were made (forward, and backward
when the capture runs it), under torch.profiler with ``with_stack=True`` and
``torch.compiler.set_stance("fail_on_recompile")``: a call that would compile is not measured, since its ops would be
the compile's. The model's gradients, buffers and the RNG state are put back afterwards. What the event tree of one
such call holds (read off real profiles: torch 2.13 on a CPU, 2.11 on an H200; tests/test_runtime_coverage.py):

- ``Torch-Compiled Region: <compile id>`` spans (torch/_dynamo/convert_frame.py) enclose each run of a frame Dynamo
  compiled: its transformed bytecode, the graphs that bytecode calls, and the code between them, which runs
  eagerly. An op in a region ran in a graph when a frame of the compiler's runtime lies between the op and the
  region: FX's generated code (``<eval_with_key>``), Inductor's output code, AOTAutograd's runtime wrappers;
- ``autograd::engine::evaluate_function: CompiledFunctionBackward`` nodes run compiled backward graphs. Any other
  backward node ran eagerly: it is the backward of the forward op that has its sequence number, and counts at
  that op's line;
- an op is counted once, at its top level: an ``aten::`` op with no ``aten::`` op around it;
- a Python call's event names the calling frame at the line of the call (the events' own names hold only the
  called function's first line): the innermost frame in the user's own files (else in a package other than torch,
  e.g. transformers) is the op's line. An op that Python's operators run (``x + y``, ``x[i]``) makes no call event;
  its line is that of the span the line hook (``sys.settrace``, the model's own files only) opened around it;
- on a GPU each op's device time is the kernels it (and the ops under it) launched: ``FunctionEvent.device_time_total``
  of the event with its correlation id.

Ops the model does not run are not counted: tcinspect's own (the loss it sums for backward, backward's seed
gradient) and the accumulation of gradients into ``.grad``.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Optional

from tcinspect.capturing import _compat, modelfile
from tcinspect.parse.breaks import is_library

REGION_PREFIX = "Torch-Compiled Region: "
BACKWARD_NODE_PREFIX = "autograd::engine::evaluate_function: "
COMPILED_BACKWARD_PREFIX = BACKWARD_NODE_PREFIX + "CompiledFunctionBackward"
#: Parts of torch that run compiled graphs (relative to torch's directory): a frame there, inside a region, means
#: the op ran in a graph, not in the eager code between graphs
COMPILER_RUNTIME = ("_functorch/_aot_autograd/", "_functorch/aot_autograd.py", "_inductor/", "_dynamo/backends/",
                    "fx/")
#: Files FX generates a GraphModule's code under
GENERATED_GRAPH_CODE = "<eval_with_key>"
#: tcinspect's own package directory: its frames call the model (the harness), they are no model code
HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: The profiler span each line of the model's own Python code runs in while measured; its line number follows
LINE_SPAN = "tcinspect line "

Frame = tuple[str, int, str]  # file, line, function


def measure(compiled: Callable[..., Any], inputs: Any, step: Callable[[Callable[..., Any], Any], Any], *,
            model: Any = None, device: str = "") -> dict[str, Any]:
    """Profile one more call of ``compiled`` made by ``step(compiled, inputs)``; the record as plain data, or
    ``{"not_measured": why}`` when the call could not be measured."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        # a rank whose one more call stopped on a guard while the others ran their collectives would hang the job
        return {"not_measured": "a rank of a distributed job: one more call would run its collectives again"}
    try:
        return _measure(compiled, modelfile.as_call(inputs), step, model if model is not None else compiled, device)
    except Exception as exc:  # noqa: BLE001 - a measurement that fails says why in the report; the capture stands
        return {"not_measured": f"the measured call raised {modelfile.describe(exc)}"}


def _measure(compiled: Callable[..., Any], inputs: modelfile.Call, step: Callable[[Callable[..., Any], Any], Any],
             model: Any, device: str) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = (device or _device_of(model, inputs)).startswith("cuda") and torch.cuda.is_available()
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    places = _Places(torch_dir=os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                     generated_dir=os.path.abspath(_compat.caches.inductor_cache_dir()) + os.sep)
    before = _compile_ids()
    with _state_kept(model, inputs, cuda):
        try:
            # public since torch 2.6: a frame Dynamo would compile raises instead (torch/_dynamo/eval_frame.py)
            with (_compat.profiler.markers_dropped(), torch.compiler.set_stance("fail_on_recompile"),
                  profile(activities=activities, with_stack=True) as prof):
                with _line_spans(places):
                    step(compiled, inputs)
                if cuda:
                    torch.cuda.synchronize()
        except Exception as exc:
            if _compat.exceptions.refused_to_compile(exc):
                return {"not_measured": "one more call of the compiled model would compile again (a guard failed), "
                                        "and a compile's ops are not the model's"}
            raise
    compiled_now = sorted(_compile_ids() - before)
    if compiled_now:
        return {"not_measured": f"the measured call compiled again ({', '.join(compiled_now)}), and a compile's "
                                "ops are not the model's"}
    device_us = _device_times(prof) if cuda else None
    return record(_compat.profiler.profiled_events(prof), places, device_us, _compat.provenance.module_names(model))


def _device_of(model: Any, inputs: modelfile.Call) -> str:
    import torch

    for value in inputs.values():
        if isinstance(value, torch.Tensor):
            return value.device.type
    params = getattr(model, "parameters", None)
    for p in (params() if callable(params) else ()):
        return str(p.device.type)
    return "cpu"


def _compile_ids() -> set[str]:
    return {cid for _code, ids in _compat.dynamo.frame_cache_entries() for cid in ids}


@contextlib.contextmanager
def _state_kept(model: Any, inputs: modelfile.Call, cuda: bool) -> Iterator[None]:
    """The measured call changes nothing the model keeps: gradients (set aside, so the call's do not add to them),
    buffers (BatchNorm's running statistics) and the RNG state (dropout) are as before it, afterwards."""
    import torch

    is_module = isinstance(model, torch.nn.Module)
    leaves = [*(model.parameters() if is_module else ()),
              *(v for v in inputs.values() if isinstance(v, torch.Tensor) and v.is_leaf and v.requires_grad)]
    grads = [(t, t.grad) for t in leaves]
    for t in leaves:
        t.grad = None
    with torch.no_grad():
        buffers = [(b, b.clone()) for b in (model.buffers() if is_module else ())]
    try:
        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if cuda else []):
            yield
    finally:
        for t, grad in grads:
            t.grad = grad
        with torch.no_grad():
            for b, saved in buffers:
                b.copy_(saved)


@contextlib.contextmanager
def _line_spans(places: _Places) -> Iterator[None]:
    """Each line the model's own Python code runs (the user's files, other packages') runs inside a profiler span
    named with its line number: an op that Python's operators run (``x + y``) makes no call event to name its line,
    and the span names it. Not where a trace function is set already (a debugger's, coverage's): it stays, and such
    an op's line is the frame's nearest call's."""
    if sys.gettrace() is not None:
        yield
        return
    from torch.autograd.profiler import record_function

    spans: dict[FrameType, Any] = {}
    traced: dict[str, bool] = {}

    def on_line(frame: FrameType, event: str, arg: Any) -> Any:
        span = spans.pop(frame, None)
        if span is not None:
            span.__exit__(None, None, None)
        if event == "line":
            span = record_function(f"{LINE_SPAN}{frame.f_lineno}")
            span.__enter__()
            spans[frame] = span
        return on_line

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        file = frame.f_code.co_filename
        if file not in traced:
            traced[file] = places.kind(file) in ("user", "package")
        return on_line if traced[file] else None

    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(None)
        for span in reversed(list(spans.values())):
            span.__exit__(None, None, None)


def _device_times(prof: Any) -> dict[int, float]:
    """Each CPU-side op's device time (its kernels' and its children's, µs), by its correlation id."""
    from torch.autograd import DeviceType

    return {e.id: float(e.device_time_total) for e in prof.events() if e.device_type == DeviceType.CPU}


@dataclass(frozen=True)
class _Places:
    """Where a frame's file lies decides what it is."""

    torch_dir: str
    generated_dir: str  # Inductor's output code
    harness: str = HARNESS

    def kind(self, file: str) -> str:
        """"harness", "compiler" (runs compiled graphs), "torch" (torch elsewhere, the standard library), "user"
        (the user's own files) or "package" (another installed package)."""
        if file.startswith(GENERATED_GRAPH_CODE):
            return "compiler"
        if not file or file.startswith("<"):
            return "torch"
        if file.startswith(self.harness):
            return "harness"
        if file.startswith(self.generated_dir):
            return "compiler"
        if file.startswith(self.torch_dir):
            return "compiler" if file[len(self.torch_dir):].startswith(COMPILER_RUNTIME) else "torch"
        if file.startswith("torch" + os.sep):  # a path the tracer names relative to a directory no longer known
            return "compiler" if file[len("torch" + os.sep):].startswith(COMPILER_RUNTIME) else "torch"
        if is_library(file):
            return "package" if any(p in file for p in ("site-packages", "dist-packages")) else "torch"
        return "user"


@dataclass
class _Island:
    frame: Frame
    ops: Counter = field(default_factory=Counter)
    time_us: float = 0.0
    modules: list[str] = field(default_factory=list)


def record(roots: list[_compat.profiler.ProfiledEvent], places: _Places, device_us: Optional[dict[int, float]] = None,
           module_names: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The runtime-coverage record of one profiled call (parse/coverage.py ``_runtime`` reads it): top-level ATen
    ops compiled and eager, their time (µs: CPU wall time, or device time where ``device_us`` is given), and the
    eager ones by user line, costliest first."""
    names = module_names or {}

    def cost(event: _compat.profiler.ProfiledEvent) -> float:
        if device_us is not None:
            return device_us.get(event.correlation_id, 0.0)
        return (event.end_ns - event.start_ns) / 1000.0

    ops = [e for e in _walk(roots) if e.kind == "op" and e.name.startswith("aten::") and not _under_aten(e)]
    placed = [(op, *_place(op, places)) for op in ops]
    # the forward ops' lines by sequence number: an eager backward node's ops count at its forward op's line
    lines_of: dict[int, tuple[Frame, int]] = {}
    for op, where, frame, module in placed:
        if where == "eager" and frame is not None:
            for e in _walk([op]):
                if e.sequence_nr >= 0:
                    lines_of.setdefault(e.sequence_nr, (frame, module))
    islands: dict[tuple[str, int], _Island] = {}
    compiled_ops, not_compiled = 0, []
    for op, where, frame, module in placed:
        if where == "compiled":
            compiled_ops += 1
            continue
        not_compiled.append(op)
        if where == "backward":
            frame, module = lines_of.get(_backward_node(op).sequence_nr, (None, 0))
        if frame is None:
            continue  # not the model's op
        island = islands.setdefault((frame[0], frame[1]), _Island(frame))
        island.ops[op.name] += 1
        island.time_us += cost(op)
        name = names.get(str(module), "") if module else ""
        if name and name not in island.modules:
            island.modules.append(name)
    regions = [e for e in _walk(roots) if _is_compiled_container(e) and not any(
        _is_compiled_container(a) for a in _ancestors(e))]
    inside = {id(r) for r in regions}
    # a region's time less the ops that ran in it outside its graphs (the eager code between them)
    between = sum(cost(op) for op in not_compiled if any(id(a) in inside for a in _ancestors(op)))
    eager_ops = sum(sum(i.ops.values()) for i in islands.values())
    on_gpu = device_us is not None
    ordered = sorted(islands.values(), key=lambda i: (
        -i.time_us if on_gpu else -sum(i.ops.values()), i.frame[0], i.frame[1]))
    return {
        "ops": compiled_ops + eager_ops,
        "compiled_ops": compiled_ops,
        "eager_ops": eager_ops,
        "compiled_time_us": round(max(sum(cost(r) for r in regions) - between, 0.0), 1),
        "eager_time_us": round(sum(i.time_us for i in islands.values()), 1),
        "islands": [_island_record(i) for i in ordered],
        "not_measured": "",
    }


def _island_record(island: _Island) -> dict[str, Any]:
    file, line, function = island.frame
    linecache.checkcache(file)
    return {"file": file, "line": line, "function": function, "code": linecache.getline(file, line).strip(),
            "ops": sum(island.ops.values()), "time_us": round(island.time_us, 1),
            "op_counts": [[name, n] for name, n in sorted(island.ops.items(), key=lambda kv: (-kv[1], kv[0]))],
            # the modules whose forward ran the line (named as in the model); parse/coverage.py does not read it yet
            "module": ", ".join(island.modules)}


def _walk(roots: list[_compat.profiler.ProfiledEvent]) -> Iterator[_compat.profiler.ProfiledEvent]:
    todo = list(reversed(roots))
    while todo:
        event = todo.pop()
        yield event
        todo.extend(reversed(event.children))


def _ancestors(event: _compat.profiler.ProfiledEvent) -> Iterator[_compat.profiler.ProfiledEvent]:
    node = event.parent
    while node is not None:
        yield node
        node = node.parent


def _under_aten(event: _compat.profiler.ProfiledEvent) -> bool:
    return any(a.kind == "op" and a.name.startswith("aten::") for a in _ancestors(event))


def _is_compiled_container(event: _compat.profiler.ProfiledEvent) -> bool:
    return event.kind == "op" and event.name.startswith((REGION_PREFIX, COMPILED_BACKWARD_PREFIX))


def _backward_node(op: _compat.profiler.ProfiledEvent) -> _compat.profiler.ProfiledEvent:
    return next(a for a in _ancestors(op) if a.kind == "op" and a.name.startswith(BACKWARD_NODE_PREFIX))


def _place(op: _compat.profiler.ProfiledEvent, places: _Places) -> tuple[str, Optional[Frame], int]:
    """Where a top-level op ran: ("compiled", None, 0), ("eager", its line, the id of the module whose forward has
    that line, or 0), ("backward", None, 0) for an eager backward node's op with no line of its own, or ("outside",
    None, 0) for an op the model did not run (tcinspect's)."""
    user: Optional[tuple[Frame, Optional[_compat.profiler.ProfiledEvent]]] = None
    package: Optional[tuple[Frame, Optional[_compat.profiler.ProfiledEvent]]] = None
    compiler = False
    below = op
    first_call = True
    span_line = 0
    for event in _ancestors(op):
        if event.kind == "op" and event.name.startswith(LINE_SPAN):
            span_line = span_line or int(event.name[len(LINE_SPAN):])
        elif event.kind == "op":
            if (event.name.startswith(REGION_PREFIX) and compiler) or event.name.startswith(COMPILED_BACKWARD_PREFIX):
                return "compiled", None, 0
            if event.name.startswith(BACKWARD_NODE_PREFIX) and user is None:
                return "backward", None, 0
        elif event.kind == "py":
            frames: list[tuple[Frame, Optional[_compat.profiler.ProfiledEvent]]] = []
            if first_call and event.callsite is not None:
                # a Python function runs the op itself (an operator: x + y): the function's own frame comes first
                line = span_line or _nearest_call_line(event, below)
                frames.append(((event.callsite[0], line, event.callsite[2]), event))
            if event.caller is not None:
                frames.append((event.caller, event.parent))
            first_call = False
            for frame, frame_event in frames:
                kind = places.kind(frame[0])
                if kind == "harness":
                    return _eager(user or package)
                if kind == "compiler":
                    compiler = True
                elif kind == "user" and user is None:
                    user = (frame, frame_event)
                elif kind == "package" and package is None:
                    package = (frame, frame_event)
        below = event
    return _eager(user or package)


def _eager(found: Optional[tuple[Frame, Optional[_compat.profiler.ProfiledEvent]]]) -> tuple[str, Optional[Frame], int]:
    if found is None:
        return "outside", None, 0
    frame, frame_event = found
    return "eager", frame, _module_of(frame_event)


def _module_of(frame_event: Optional[_compat.profiler.ProfiledEvent]) -> int:
    """The id of the nn.Module whose call holds a frame: the innermost module call around the frame's own event."""
    node = frame_event
    while node is not None:
        if node.module_id:
            return node.module_id
        node = node.parent
    return 0


def _nearest_call_line(frame_event: _compat.profiler.ProfiledEvent, below: _compat.profiler.ProfiledEvent) -> int:
    """Where no line span says it, the line of a frame at an op its own code ran with no call (an operator): the
    line of the frame's nearest call before the op, else after it, else the function's first line."""
    children = frame_event.children
    at = next((i for i, c in enumerate(children) if c is below), len(children))
    for c in [*reversed(children[:at]), *children[at + 1:]]:
        if c.kind == "py" and c.caller is not None:
            return c.caller[1]
    return frame_event.callsite[1] if frame_event.callsite is not None else 0
