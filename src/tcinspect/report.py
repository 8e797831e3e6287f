"""The report: a pure, frozen data model of one torch.compile run.

Holds only strings, numbers, booleans, tuples and other model classes, so that renderers,
checks and saved-report readers never need torch. Keys reuse PyTorch's artifact names where
one exists (``dynamo_output_graph``, ``aot_forward_graph``, ``inductor_output_code``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

from tcinspect.errors import UsageError

if TYPE_CHECKING:  # the annotations of Report's views (show, save) alone
    import os
    from collections.abc import Sequence
    from pathlib import Path

#: Bumped whenever a saved report of the previous version cannot be read as it is.
SCHEMA_VERSION = 1

# Stage status words, shared by every stage.
OK = "ok"
FAILED = "failed"
NOT_RUN = "not_run"


@dataclass(frozen=True)
class SourceLocation:
    """A place in user code: file, line, function and the line's text."""

    file: str
    line: int
    function: str = ""
    code: str = ""

    def short(self) -> str:
        name = self.file.rsplit("/", 1)[-1]
        return f"{name}:{self.line}"


@dataclass(frozen=True)
class Node:
    """One FX node, as printed by ``GraphModule.print_readable``."""

    op: str  # placeholder | call_function | call_method | call_module | get_attr | output
    name: str
    target: str = ""
    args: str = ""
    dtype: str = ""  # e.g. "f32", "bf16", "b8"; "" when not a tensor
    shape: tuple[str, ...] = ()  # sizes as text: "8", "s0", "s0*2"
    stride: tuple[str, ...] = ()
    device: str = ""
    source: Optional[SourceLocation] = None


@dataclass(frozen=True)
class Graph:
    """An FX graph: its readable code and its node table."""

    name: str  # PyTorch's artifact name, e.g. "dynamo_output_graph", "aot_forward_graph"
    code: str
    nodes: tuple[Node, ...] = ()
    #: For an AOT forward graph: the outputs saved for the backward pass.
    saved_for_backward: tuple[str, ...] = ()

    @property
    def op_count(self) -> int:
        return sum(1 for n in self.nodes if n.op in ("call_function", "call_method", "call_module"))


@dataclass(frozen=True)
class Guard:
    """One leaf guard Dynamo installed on a compiled graph."""

    kind: str  # tensor | symbolic_shape | value | type | identity | attribute | global_state | other
    guard_type: str  # PyTorch's guard name, e.g. TENSOR_MATCH, EQUALS_MATCH
    source: str  # the guarded source, e.g. "L['x']"
    expression: str  # the check as PyTorch prints it
    user_code: str = ""  # the user line that made Dynamo install it, when PyTorch says


@dataclass(frozen=True)
class GraphBreak:
    """One graph break event Dynamo emitted."""

    compile_id: str
    user_frame: Optional[SourceLocation]
    break_type: str  # the registry name, e.g. "Data-dependent branching"
    gb_id: str = ""  # e.g. "GB0170" where the torch version has one
    reason: str = ""  # what Dynamo was doing, e.g. "attempting to trace CALL ..."
    explanation: str = ""
    hints: tuple[str, ...] = ()
    fix: str = ""  # tcinspect's suggested fix (falls back to PyTorch's first hint)
    #: The user's source around the break: (line number, text) pairs, when the file was readable.
    context: tuple[tuple[int, str], ...] = ()
    raw: str = ""  # PyTorch's full text, kept for versions whose wording we do not parse
    #: When the break is in another file than the frame being compiled (a library, a hook, a helper): the
    #: line of the model that led there, from the break's stack (the innermost frame of the user's own
    #: code, else of the compiled frame's file); None when the break is in the compiled frame's own file.
    model_frame: Optional[SourceLocation] = None


@dataclass(frozen=True)
class DynamoGraph:
    """A graph Dynamo captured for one compiled frame, with its guards."""

    compile_id: str
    function: str
    file: str
    line: int
    graph: Graph
    guards: tuple[Guard, ...] = ()
    #: What the backend was handed with the graph, e.g. "f32[8, 16]" (recorded for custom backends).
    example_inputs: tuple[str, ...] = ()
    #: torch's error when the backend failed on this graph and the frame ran eagerly ("" when it compiled).
    backend_error: str = ""


@dataclass(frozen=True)
class BackendFailure:
    """A graph the backend failed on, after which Dynamo ran the frame eagerly ("WON'T CONVERT" in torch's
    log): not a graph break, though torch logs it as one."""

    compile_id: str
    function: str  # the frame Dynamo did not convert
    file: str
    line: int
    error: str  # the backend's exception, e.g. "DataDependentOutputException: aten._local_scalar_dense.default"
    #: The user line torch was lowering when it failed ("Original traceback"), when torch says.
    user_frame: Optional[SourceLocation] = None
    raw: str = ""


@dataclass(frozen=True)
class Recompile:
    """A compile of a frame that had compiled before: why its cached code was rejected."""

    compile_id: str
    function: str
    #: The failed guard of each earlier cache entry, as PyTorch reports them (newest first).
    reasons: tuple[str, ...]
    #: Which call triggered it: 0 for example_inputs, k for input_sets[k - 1] (for a script: its call
    #: k + 1 into compiled code); -1 unknown.
    input_set: int = -1
    #: Dynamo hit its recompile limit here and ran the frame eagerly instead.
    limit_hit: bool = False
    suggestion: str = ""


@dataclass(frozen=True)
class InputSetError:
    """An input set that raised when run (the others were still analysed)."""

    input_set: int
    error: str


@dataclass(frozen=True)
class DynamoStage:
    status: str = NOT_RUN
    error: str = ""
    graphs: tuple[DynamoGraph, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    recompiles: tuple[Recompile, ...] = ()
    #: Graphs the backend failed on (each frame then ran eagerly), in the order torch logged them.
    backend_failures: tuple[BackendFailure, ...] = ()


@dataclass(frozen=True)
class AotGraphs:
    """AOTAutograd's graphs for one compiled frame."""

    compile_id: str
    joint: Optional[Graph] = None  # aot_joint_graph
    forward: Optional[Graph] = None  # aot_forward_graph
    backward: Optional[Graph] = None  # aot_backward_graph
    inference: Optional[Graph] = None  # aot_inference_graph


@dataclass(frozen=True)
class UserKernel:
    """A user-written Triton kernel the AOT graph calls (``triton_kernel_wrapper_functional``/``_mutation``)."""

    compile_id: str
    graph: str  # the AOT graph holding the call: forward | backward | inference | joint
    node: str  # the FX node calling it
    wrapper: str  # triton_kernel_wrapper_functional | triton_kernel_wrapper_mutation
    kernel_idx: int
    name: str = ""  # the @triton.jit function's name, from PyTorch's kernel side table
    grid: str = ""  # as the graph states it, e.g. "[(8, 1, 1)]"
    tensor_args: tuple[str, ...] = ()  # "param=node" for every tensor argument
    mutated: tuple[str, ...] = ()  # the parameters the kernel writes
    constant_args: str = ""  # the non-tensor arguments, from the side table
    source: str = ""  # the kernel's Triton source


@dataclass(frozen=True)
class CustomOp:
    """A custom operator (``torch.ops.NS.NAME``) in a Dynamo graph, and whether the compiler sees inside it."""

    name: str  # e.g. "custom_ops.triton_silu_triton_op"
    #: transparent: decomposed into the kernels it launches (``triton_op`` + ``wrap_triton``);
    #: opaque: kept as one call (``custom_op`` with a fake implementation)
    visibility: str
    detail: str = ""


@dataclass(frozen=True)
class AotStage:
    status: str = NOT_RUN
    error: str = ""
    graphs: tuple[AotGraphs, ...] = ()
    user_kernels: tuple[UserKernel, ...] = ()
    custom_ops: tuple[CustomOp, ...] = ()


@dataclass(frozen=True)
class Kernel:
    """One kernel launch in Inductor's wrapper, in launch order."""

    name: str
    #: triton_pointwise | triton_reduction | triton_persistent_reduction | triton_template |
    #: triton_foreach | triton_scan | triton | user_triton | cpp | extern
    kind: str
    language: str = ""  # "triton" | "cpp" | "" (extern kernels have no source here)
    source_nodes: tuple[str, ...] = ()  # FX nodes of the post-grad graph it was made from
    aten_ops: tuple[str, ...] = ()  # ATen ops it fused
    user_lines: tuple[str, ...] = ()  # "file:line" of the user code those nodes come from
    launch: str = ""  # the wrapper line that launches it
    numel: str = ""  # launch size where the wrapper states it
    #: Buffers the launch passes whose allocation the wrapper states: "buf0: f32[8, 32]".
    buffers: tuple[str, ...] = ()
    source: str = ""  # the kernel's code (Triton Python or C++)
    #: "inductor": source_nodes are exactly what Inductor's provenance tracking states for this launch;
    #: "inferred": read from the wrapper's comments and kernel names (Inductor stated nothing).
    provenance: str = ""
    provenance_key: str = ""  # Inductor's "name:debug handle" of this launch, where the wrapper states it
    dynamo_nodes: tuple[str, ...] = ()  # nodes of Dynamo's (pre-grad) graph those post-grad nodes came from
    modules: tuple[str, ...] = ()  # module paths (from nn_module_stack) of those nodes, e.g. transformer.h.0.attn
    #: every frame of the stack traces Inductor gives for the kernel (user and library code), outermost first
    frames: tuple[SourceLocation, ...] = ()


@dataclass(frozen=True)
class OutputCode:
    """Inductor's output code for one AOT graph (forward, backward or inference)."""

    compile_id: str
    aot_id: str  # PyTorch's "AOT ID", e.g. "0_forward"
    part: str  # forward | backward | inference
    wrapper: str  # inductor_output_code: the whole generated module
    kernels: tuple[Kernel, ...] = ()
    post_grad_graph: Optional[Graph] = None  # inductor_post_grad_graph (after_post_grad_graph in 2025 nightlies)
    cache: str = ""  # fx graph cache: hit | miss | bypass | ""
    #: inductor_collective_schedule: the collectives in the order Inductor scheduled them (op names), when any
    collective_schedule: tuple[str, ...] = ()
    #: why some kernels' provenance is ``unknown`` (Inductor stated no node mapping), then its fix: "" when none is
    unknown_provenance: str = ""


@dataclass(frozen=True)
class InductorStage:
    status: str = NOT_RUN
    error: str = ""
    outputs: tuple[OutputCode, ...] = ()


@dataclass(frozen=True)
class Stages:
    dynamo: DynamoStage = DynamoStage()
    aot_autograd: AotStage = AotStage()
    inductor: InductorStage = InductorStage()


@dataclass(frozen=True)
class CompileMetrics:
    """compilation_metrics for one compile id: times in seconds and cache states."""

    compile_id: str
    function: str = ""
    file: str = ""
    line: int = 0
    entire_frame_compile_time_s: float = 0.0
    backend_compile_time_s: float = 0.0
    inductor_compile_time_s: float = 0.0
    code_gen_time_s: float = 0.0
    guard_count: int = 0
    graph_op_count: int = 0
    aot_autograd_cache: str = ""  # hit | miss | bypass | ""
    fail_type: str = ""
    fail_reason: str = ""


@dataclass(frozen=True)
class Target:
    """What was captured: a model file, a script, or an in-process callable."""

    kind: str  # model | script | callable
    path: str = ""  # as the user gave it
    sha256: str = ""  # of the file's bytes
    model_name: str = ""
    inputs_name: str = ""
    input_sets: int = 0


def is_user_target(spec: str) -> bool:
    """Whether a --backend or --pass names the user's own code (``module:fn``, ``file.py:fn``), not a
    registered backend."""
    return ":" in spec


#: torch.compile's ``dynamic=``: "" is torch's default (static first, automatic dynamic on a recompile).
Dynamic = Literal["", "true", "false"]


@dataclass(frozen=True)
class CompileFields:
    """The torch.compile options, declared once: the request's ``CompileOptions`` (checked when built) and the
    report's record ``Options`` both hold these fields, so a new compile option is one field here."""

    backend: str = "inductor"
    mode: str = ""
    fullgraph: bool = False
    dynamic: Dynamic = ""
    backward: bool = True
    device: str = ""
    #: FX passes applied to the ATen graphs before Inductor (``module:fn`` or ``file.py:fn``)
    passes: tuple[str, ...] = ()
    #: torch._dynamo.config settings for the capture, each ``name=value`` (``breaks --try-fixes`` tries one per
    #: trial): True/False or a Python literal; a set-valued config (reorderable_logging_functions) takes the dotted
    #: names of functions, comma-separated, added to its set. Applied in the capture's child process only.
    dynamo_config: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompileOptions(CompileFields):
    """What torch.compile is asked for, and how the model runs (device, backward): ``CompileFields``.

    Checked when built: a ``dynamic`` or ``device`` torch.compile would not take raises
    ``tcinspect.errors.UsageError`` here, in the caller's process, not in the capture. ``dynamic`` takes
    torch.compile's own True, False and None too, kept as "true", "false" and "" (the CLI's words)."""

    def __post_init__(self) -> None:
        spelled = {True: "true", False: "false", None: ""}
        if isinstance(self.dynamic, (bool, type(None))):
            object.__setattr__(self, "dynamic", spelled[self.dynamic])
        if not isinstance(self.dynamic, str) or self.dynamic not in get_args(Dynamic):
            raise UsageError(f"dynamic={self.dynamic!r} is not True, False or None",
                             "pass CompileOptions(dynamic=True), dynamic=False or dynamic=None (torch's default)")
        if self.device and self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise UsageError(f"device={self.device!r} is not cpu or cuda",
                             "pass CompileOptions(device='cpu'), device='cuda' or device='cuda:N'")
        if isinstance(self.passes, (str, list)):
            raise UsageError(f"passes={self.passes!r} is not a tuple of module:fn or file.py:fn names",
                             "pass a tuple, e.g. passes=('passes.py:rewrite',)")

    @property
    def runs_user_code(self) -> bool:
        """A --pass or a --backend module:fn runs the user's code from files the report cache does not watch."""
        return bool(self.passes) or is_user_target(self.backend)


@dataclass(frozen=True)
class VerifyRequest:
    """``tcinspect verify``: run eager side by side and compare outputs and gradients."""

    rtol: Optional[float] = None  # None: by dtype
    atol: Optional[float] = None
    #: on a mismatch, search where compiled results first depart for at most this many seconds, in the capture's
    #: own process (so ``--timeout`` bounds it too); None: no search (capturing/locate.py)
    locate_budget: Optional[float] = None


@dataclass(frozen=True)
class ExportRequest:
    """``tcinspect export``: torch.export in these modes instead of torch.compile."""

    modes: tuple[str, ...] = ("strict", "non-strict")
    dynamic_dims: tuple[int, ...] = ()  # input dimensions marked dynamic (Dim) on every tensor input
    aoti: bool = False  # also compile and package with AOTInductor, and compare with eager


@dataclass(frozen=True)
class BenchRequest:
    """``codegen --bench``: time every kernel on the GPU and place it on the roofline."""

    runs: int = 100
    try_mode: str = ""  # also time the step compiled with this torch.compile mode


@dataclass(frozen=True)
class Options(CompileFields):
    """What a capture was asked for, as the report records it: the compile options (``CompileFields``), then
    the fields of the verify / export / bench requests (flat, as schema 1 has them; ``of`` builds it from the
    parts)."""

    #: run eager side by side and compare outputs and gradients (``tcinspect verify``)
    verify: bool = False
    rtol: Optional[float] = None  # verify tolerances; None: by dtype
    atol: Optional[float] = None
    #: verify: seconds the search for where results first depart may take on a mismatch (None: no search)
    locate_budget: Optional[float] = None
    #: torch.export modes to run instead of torch.compile (``tcinspect export``): strict, non-strict
    export: tuple[str, ...] = ()
    dynamic_dims: tuple[int, ...] = ()  # export: input dimensions marked dynamic (Dim) on every tensor input
    aoti: bool = False  # export: also compile and package with AOTInductor, and compare with eager
    #: ``codegen --bench``: time every kernel this many runs on the GPU (0: no kernel benchmark)
    bench: int = 0
    #: ``codegen --bench --try-mode MODE``: also time the step compiled with this torch.compile mode
    try_mode: str = ""
    #: ``guards --per-call N``: after compiling, time N calls per input set under torch.profiler (0: none)
    per_call: int = 0
    #: measure one training step's peak memory, compiled and eager, on a CUDA device after compiling (``memory``,
    #: ``check --max-peak-ratio``): warm-up and measured steps, compiled and eager, so only when asked for
    measure_memory: bool = False

    @classmethod
    def of(cls, compile: CompileOptions, verify: Optional[VerifyRequest] = None,
           export: Optional[ExportRequest] = None, bench: Optional[BenchRequest] = None) -> Options:
        """The record of a capture asked for with these options and requests."""
        # every compile option is recorded under its own name
        return cls(**{f.name: getattr(compile, f.name) for f in dataclasses.fields(CompileFields)},
                   verify=verify is not None, rtol=verify.rtol if verify else None,
                   atol=verify.atol if verify else None, locate_budget=verify.locate_budget if verify else None,
                   export=export.modes if export else (), dynamic_dims=export.dynamic_dims if export else (),
                   aoti=export.aoti if export else False,
                   bench=bench.runs if bench else 0, try_mode=bench.try_mode if bench else "")

    @property
    def compile(self) -> CompileOptions:
        return CompileOptions(**{f.name: getattr(self, f.name) for f in dataclasses.fields(CompileFields)})

    @property
    def verify_request(self) -> Optional[VerifyRequest]:
        return VerifyRequest(self.rtol, self.atol, self.locate_budget) if self.verify else None

    @property
    def export_request(self) -> Optional[ExportRequest]:
        return ExportRequest(self.export, self.dynamic_dims, self.aoti) if self.export else None

    @property
    def bench_request(self) -> Optional[BenchRequest]:
        return BenchRequest(self.bench, self.try_mode) if self.bench else None


def options_from_json(data: dict[str, Any]) -> Options:
    """Options back from JSON (an isolated child, a rank, AOTInductor's child): lists become tuples."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return Options(**fields)


@dataclass(frozen=True)
class FrameCoverage:
    """One compile of a Python frame: the calls its graph captured, or why the frame ran eagerly."""

    compile_id: str
    function: str
    file: str
    line: int
    #: The graph's call_function / call_method / call_module nodes (compilation_metrics' graph_op_count,
    #: torch._dynamo.utils.count_calls): what this compile adds to ``calls_captured``.
    calls_captured: int
    #: Dynamo gave up on the frame and ran it eagerly (PyTorch CI counts it in ``fallbacks_to_eager``).
    eager: bool = False
    fail_type: str = ""  # torch's exception type when eager, e.g. "Unsupported"
    reason: str = ""  # torch's first line of why, when eager
    #: The user line torch gave up at (compilation_metrics' fail_user_frame_*), when torch says.
    user_frame: Optional[SourceLocation] = None


@dataclass(frozen=True)
class EagerIsland:
    """Eager ATen ops the measured call ran at one user line, between or outside compiled regions."""

    file: str
    line: int
    function: str
    code: str = ""  # the user's source line, when readable
    #: The module whose forward the line ran in (its path in the user's model), when the profiler says
    module: str = ""
    ops: int = 0  # top-level ATen ops run there
    time_us: float = 0.0  # their self CPU (on a GPU: device) time, in microseconds
    #: The ATen ops, most run first, e.g. ("aten::add", 4)
    op_counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RuntimeCoverage:
    """Of the ATen ops one measured call of the model ran (torch.profiler), how many ran inside compiled regions
    (``Torch-Compiled Region`` spans, compiled backward nodes) and how many eagerly."""

    ops: int = 0
    compiled_ops: int = 0
    eager_ops: int = 0
    compiled_time_us: float = 0.0
    eager_time_us: float = 0.0
    #: Eager ops by user line, costliest first.
    islands: tuple[EagerIsland, ...] = ()
    #: Why nothing was measured ("" when measured), e.g. a script (no call tcinspect can repeat) or a log.
    not_measured: str = ""


@dataclass(frozen=True)
class Coverage:
    """How much of the model torch.compile captured, with PyTorch CI's names and definitions
    (benchmarks/dynamo/check_graph_breaks.py): ``counters["stats"]["calls_captured"]``,
    ``counters["stats"]["unique_graphs"]`` and ``fallbacks_to_eager`` (``counters["frames"]["total"] - ["ok"]``)."""

    #: "counters": torch's counters of this run, read as it ended; "compilation_metrics": a log, whose
    #: per-compile records (graph_op_count, fail_type) give the same figures.
    source: str
    calls_captured: int
    unique_graphs: int
    fallbacks_to_eager: int
    #: ``sum(counters["graph_break"].values())``, PyTorch CI's graph_breaks: it leaves out the breaks torch does
    #: not resume after (a frame it skips, a data-dependent branch), which ``summary.graph_breaks`` counts.
    #: -1 where torch's counter was not read (a log).
    graph_break_counter: int = -1
    #: Every compile, in order.
    frames: tuple[FrameCoverage, ...] = ()
    #: The measured call's ATen ops, compiled and eager; None where not asked for (older reports).
    runtime: Optional[RuntimeCoverage] = None

    @property
    def eager_frames(self) -> tuple[FrameCoverage, ...]:
        return tuple(f for f in self.frames if f.eager)


@dataclass(frozen=True)
class Summary:
    """The headline counts. docs/trace.md ("What each count means") defines each, a graph break included."""

    graphs: int
    graph_breaks: int
    distinct_graph_breaks: int
    recompiles: int
    guards: int
    aot_graphs: int
    kernels: int
    compile_time_s: float
    cache_hits: int
    cache_misses: int
    #: Graphs the backend failed on, which ran eagerly: not counted in ``graphs``.
    graphs_failed: int = 0
    #: PyTorch CI's coverage figures (Report.coverage): ops captured into graphs, graphs compiled, frames run
    #: eagerly. -1 where the report has no coverage (saved before it was recorded).
    calls_captured: int = -1
    unique_graphs: int = -1
    fallbacks_to_eager: int = -1


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


@dataclass(frozen=True)
class TensorCheck:
    """One compiled tensor compared with its eager twin (an output or a gradient)."""

    name: str  # "output[0]", "grad input[0]", "grad linear.weight"
    dtype: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    rtol: float
    atol: float
    ok: bool
    message: str = ""  # torch.testing.assert_close's first line on a mismatch
    #: Root-mean-square error from the float64 eager run, of compiled and of eager (0 when assert_close
    #: passed, or no float64 run): a tensor outside the tolerances passes when compiled's is within noise
    fp64_rmse: float = 0.0
    eager_fp64_rmse: float = 0.0


@dataclass(frozen=True)
class LocateStep:
    """One run of the search for where results depart: what ran, whether it matched eager, and how long it took."""

    what: str  # "aot_eager --pass m.py:p on each AOT graph, node by node", "inductor"
    ok: bool
    seconds: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class FirstDivergence:
    """Where compiled results first depart from eager (``verify`` on a mismatch; capturing/locate.py).

    ``node`` is set when one node of one graph departs by verify's rule; ``stage`` when no node does and the
    backend stages were bisected (the first of aot_eager, aot_eager_decomp_partition, inductor to fail). Where
    that stage has subsystems, torch's CompilerBisector names the one that introduces it (``subsystem``,
    ``bisect_number``, ``debug_info``: its BisectionResult); a lowering it names is placed at its node's user line."""

    graph: str = ""  # "aot_forward_graph 0", "aot_backward_graph 0", "dynamo_output_graph 0"
    node: str = ""
    op: str = ""  # "aten.hardsigmoid.default"
    line: str = ""  # FILE:LINE of the user code the node came from
    module: str = ""  # the innermost nn.Module (nn_module_stack)
    max_abs: float = 0.0
    rmse: float = 0.0  # from float64 eager where it ran, else from eager
    stage: str = ""
    #: torch's CompilerBisector, where it ran: the subsystem whose disabling fixes it ("lowerings",
    #: "post_grad_passes", "inductor_emulate_precision_casts"), the application of it that first fails (a count
    #: from 0) and torch's debug info for that application (the pass's name, the node a lowering lowered)
    subsystem: str = ""
    bisect_number: Optional[int] = None
    debug_info: str = ""
    note: str = ""
    steps: tuple[LocateStep, ...] = ()
    seconds: float = 0.0
    stopped: str = ""  # set when the time budget ended the search


@dataclass(frozen=True)
class Verification:
    """Eager against compiled on the same inputs: every output, and gradients of inputs and parameters."""

    ok: bool
    tensors: tuple[TensorCheck, ...] = ()
    error: str = ""  # set when the comparison could not run (e.g. the outputs differ in structure)
    reference: str = ""  # "float64": a float64 eager run judged the tensors the tolerances rejected
    #: where results first depart (``verify`` on a mismatch, unless --no-locate)
    first_divergence: Optional[FirstDivergence] = None


@dataclass(frozen=True)
class ExportSignature:
    """An exported program's graph signature."""

    user_inputs: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()  # "placeholder <- parameter name"
    buffers: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    user_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class AotiRun:
    """AOTInductor compile-and-package of an exported program, checked against eager."""

    ok: bool
    package: str = ""  # the .pt2 file name
    max_abs_error: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class ExportRun:
    """One ``torch.export.export`` of the model, strict or non-strict."""

    mode: str  # strict | non-strict
    ok: bool
    error: str = ""  # one line: the exception and its message
    user_frame: Optional[SourceLocation] = None  # the user's line the failure points at
    graph: Optional[Graph] = None  # the exported graph (ATen)
    signature: Optional[ExportSignature] = None
    dynamic_shapes: str = ""  # the dynamic_shapes spec passed, as text
    aoti: Optional[AotiRun] = None


@dataclass(frozen=True)
class EventCount:
    """A structured-trace event name and how many times it was logged."""

    name: str
    count: int


@dataclass(frozen=True)
class ParseHealth:
    """What the parser met but did not understand: a sign that torch changed under tcinspect."""

    #: Structured-trace events tcinspect does not know by name (kept, not read), in first-seen order.
    unknown_events: tuple[EventCount, ...] = ()
    #: Lines of an events file that were not a structured-trace record (e.g. cut short by a crash).
    lines_not_understood: int = 0
    #: Known artifacts whose payload could not be read (e.g. a damaged provenance mapping: the kernels
    #: it describes are marked ``provenance: inferred``).
    artifacts_not_understood: tuple[EventCount, ...] = ()
    #: TORCH_TRACE logs: payloads whose md5 is not the record's has_payload (read as they are).
    payload_mismatches: int = 0
    #: TORCH_TRACE logs: a last payload cut short (the file ends inside it; the job was killed).
    truncated_payloads: int = 0
    #: TORCH_TRACE directories: files that are not rank logs, skipped.
    files_ignored: int = 0
    #: TORCH_TRACE directories: each file not read, and why (not a log, an older log of a rank, …).
    ignored_files: tuple[IgnoredFile, ...] = ()

    @property
    def damaged(self) -> bool:
        """Whether anything was not understood (``--strict`` fails on it); skipped files are not damage."""
        return bool(self.unknown_events or self.lines_not_understood or self.artifacts_not_understood
                    or self.payload_mismatches or self.truncated_payloads)


@dataclass(frozen=True)
class CudaGraphRecording:
    """One CUDA graph recording of a compiled graph (torch's ``CUDAGraphNode.record`` span)."""

    #: the model call during which it was recorded (0: example_inputs, k: input_sets[k - 1]); -1 unknown
    call: int
    record_time_s: float = 0.0


@dataclass(frozen=True)
class PartitionOp:
    """One operation of a partition torch could not CUDA-graph, as its scheduler logged it (``cudagraphs`` debug log:
    ``Scheduler._log_graph_partitions``)."""

    node: str  # Inductor's name of the operation ("op3", "buf2")
    reason: str  # torch's reason (Scheduler.should_partition): "cpu ops", "DeviceCopy ops", "dynamic shape ops", ...
    ir: str = ""  # its IR type ("ComputedBuffer", "DeviceCopy")
    fx: str = ""  # the FX node it came from, as torch writes it ("mul(args = (...))")
    user_lines: tuple[str, ...] = ()  # "file:line" of the user code, from the node's stack trace


@dataclass(frozen=True)
class PartitionRecording:
    """One CUDA graph recording of one partition (torch's "Recording function=partition_0, ..." debug line)."""

    call: int  # the model call it was recorded during (-1 unknown)
    cuda_graph_id: int = -1  # torch's GraphID of the recording (one per capture, per device)
    #: for a recording after the first: why the same partition was recorded again, as torch's tree says: its
    #: re-record reason ("static input data pointer changed"), "new symint key" (a new FunctionID: another value of
    #: its int inputs), or "recorded again" (the same function on another path of the tree)
    cause: str = ""


@dataclass(frozen=True)
class CudaGraphPartition:
    """One partition of a compiled graph under graph partitioning: Inductor splits a graph around what cannot be
    CUDA-graphed and CUDA-graphs the rest, one partition at a time."""

    index: int  # among all the graph's partitions, in order (torch's "Partition N")
    cudagraphable: bool
    function: str = ""  # the wrapper's function of a cudagraphable one ("partition_0"), recorded on its own
    nodes: int = 0  # scheduler nodes (torch's count; 0 where only the output code says)
    #: torch's reasons, for one that is not cudagraphable (its ops' reasons, each once)
    reasons: tuple[str, ...] = ()
    ops: tuple[PartitionOp, ...] = ()
    user_lines: tuple[str, ...] = ()  # its ops' user lines, each once
    #: its kernel launches, by their index in the graph's output code (OutputCode.kernels, KernelTiming.index)
    kernel_indices: tuple[int, ...] = ()
    recordings: tuple[PartitionRecording, ...] = ()

    @property
    def kernels(self) -> int:
        return len(self.kernel_indices)

    @property
    def rerecordings(self) -> int:
        return max(0, len(self.recordings) - 1)


@dataclass(frozen=True)
class CudaGraphUse:
    """What CUDA graphs did with one compiled graph (forward, backward or inference) of one compile."""

    compile_id: str
    part: str  # forward, backward or inference ("" when torch's record names no graph)
    #: recorded: captured as a CUDA graph (at least once) · skipped: torch decided not to (``reason``) ·
    #: not recorded: neither a recording nor a skip was logged (e.g. it only ran its warm-up call)
    status: str
    reason: str = ""  # torch's skip message, without "skipping cudagraphs due to"
    user_lines: tuple[str, ...] = ()  # "file:line" from the stack torch attached to the skip ("Found from")
    recordings: tuple[CudaGraphRecording, ...] = ()
    #: torch's runtime_cudagraphify_time_us for this graph (compilation_metrics_runtime), summed
    cudagraphify_time_s: float = 0.0
    #: under graph partitioning (torch's default outside fbcode): the graph's partitions, in order; empty when
    #: Inductor did not partition it (graph_partition off, a CPU graph)
    partitions: tuple[CudaGraphPartition, ...] = ()
    #: where the partitions come from: "scheduler" (torch's cudagraphs debug log, in a capture) or "output code"
    #: (the wrapper's partition functions alone: no reasons, no ops)
    partitions_from: str = ""
    kernels: int = 0  # kernel launches of the graph (the output code)
    #: of those, the ones inside a CUDA graph: in a cudagraphable partition of a recorded graph (all of a recorded
    #: graph that was not partitioned)
    kernels_in_cudagraphs: int = 0

    @property
    def rerecordings(self) -> int:
        if any(p.recordings for p in self.partitions):
            return sum(p.rerecordings for p in self.partitions)
        # per partition recordings unknown (a log): each cudagraphable partition records once before any again
        first = sum(1 for p in self.partitions if p.cudagraphable) or 1
        return max(0, len(self.recordings) - first)


@dataclass(frozen=True)
class CudaGraphs:
    """CUDA graphs under ``mode="reduce-overhead"`` (or another mode that turns them on)."""

    graphs: tuple[CudaGraphUse, ...] = ()
    #: skip messages torch logged (cudagraph_utils.log_cudagraph_skip_and_bump_counter): its
    #: ``counters["inductor"]["cudagraph_skips"]`` on a CUDA device
    skips: int = 0
    #: what the source could not hold or the run could not show, said plainly (empty when nothing)
    notes: tuple[str, ...] = ()
    #: graphs nothing was captured for that torch logged no skip for (no cudagraphable partition: torch then says
    #: nothing, pytorch#193044); ``check --max-cudagraph-skips`` counts them with ``skips``
    unlogged_skips: int = 0

    @property
    def recordings(self) -> int:
        return sum(len(g.recordings) for g in self.graphs)

    @property
    def rerecordings(self) -> int:
        return sum(g.rerecordings for g in self.graphs)

    @property
    def partitions(self) -> int:
        return sum(len(g.partitions) for g in self.graphs)

    @property
    def kernels(self) -> int:
        return sum(g.kernels for g in self.graphs)

    @property
    def kernels_in_cudagraphs(self) -> int:
        return sum(g.kernels_in_cudagraphs for g in self.graphs)


#: Failure.kind: why a report is not ok, which decides the exit code (errors.exit_code_for).
#: stage: a compiler stage failed · user_target: a --backend or --pass the user gave failed · crashed: the
#: capture (or a rank) crashed, hung past --timeout or never started · rank_error: a rank's own bad input
FAILURE_KINDS = ("stage", "user_target", "crashed", "rank_error")


@dataclass(frozen=True)
class Failure:
    """Why a report is not ok, typed: the one line a command prints (cause — fix) and its exit code (kind)."""

    kind: str  # one of FAILURE_KINDS
    cause: str
    fix: str = ""


@dataclass(frozen=True)
class Report:
    """Everything tcinspect recorded about one torch.compile run."""

    torch_version: str
    device: str
    target: Target
    options: Options = Options()
    stages: Stages = Stages()
    compiles: tuple[CompileMetrics, ...] = ()
    #: "" when the run completed; else what stopped it (the stage statuses say where).
    error: str = ""
    #: How many calls were made: example_inputs plus each input set that was run; for a script, its calls
    #: into what it compiled (a compiled function calling another counts once).
    calls: int = 0
    input_errors: tuple[InputSetError, ...] = ()
    passes: tuple[PassRun, ...] = ()
    verification: Optional[Verification] = None
    exports: tuple[ExportRun, ...] = ()
    tcinspect_version: str = ""
    schema_version: int = SCHEMA_VERSION
    #: A distributed run (``--nproc``): every rank, rank 0 included; the fields above are rank 0's.
    ranks: tuple[RankReport, ...] = ()
    #: ``codegen --bench``: every kernel timed on the GPU and placed on the roofline.
    bench: Optional[KernelBench] = None
    #: Set only when the parser met something it did not understand (see ParseHealth).
    parse: Optional[ParseHealth] = None
    #: Seconds spent compiling (wall), kept apart so that reports diff cleanly.
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)
    #: Where compile time went, phase by phase (``tcinspect compile-time``); None for older reports.
    compile_time: Optional[CompileTime] = None
    #: Set when the run failed (``error`` is set): what kind of failure, for the exit code. None for a report
    #: saved before failures were typed.
    failure: Optional[Failure] = None
    #: CUDA graphs (``--mode reduce-overhead``): what was captured, skipped and re-recorded; None when off.
    cudagraphs: Optional[CudaGraphs] = None
    #: Dynamic shapes: symbols, specializations, shape guards (``tcinspect shapes``); None when torch logged none.
    shapes: Optional[Shapes] = None
    #: What the guards cost on every call: torch's guard latency per compile, the guards evaluated in Python,
    #: and (``guards --per-call``) calls timed under torch.profiler. Measured, so kept apart like ``timings``.
    guard_cost: Optional[GuardCost] = field(default=None, compare=False)
    #: Regional compilation (``nested_compile_region``, per-block ``torch.compile``): each region's calls and
    #: reuse. None when the run compiled no region.
    regions: Optional[Regions] = None
    #: What each AOT forward graph saves for backward, Inductor's peak estimates, and (on a GPU) the measured
    #: peaks (``tcinspect memory``); None when no graph has a backward.
    memory: Optional[Memory] = None
    #: The compiled graphs the process ran, in order: each call's compile id ("?" where torch gave none), from
    #: Inductor's ``graph_execution`` record (``torch._inductor.debug.record_and_log_graph_execution_order``);
    #: () when torch logged none.
    graph_execution_order: tuple[str, ...] = ()
    #: A distributed run: where its ranks differ, found as the ranks were merged (``parse.merge``). Derived
    #: from ``ranks``, so compared through them.
    divergence: tuple[Divergence, ...] = field(default=(), compare=False)
    #: A TORCH_TRACE directory: signs that its rank logs are not one run's (another day, another torch or
    #: script, copies), found as the ranks were merged from their ``origin``. Derived, so compared through them.
    mixed_runs: tuple[MixedRun, ...] = field(default=(), compare=False)
    #: How much of the model torch.compile captured (PyTorch CI's calls_captured, unique_graphs,
    #: fallbacks_to_eager), per compile, and (a model file) at run time. None for reports saved before it.
    coverage: Optional[Coverage] = None

    @property
    def summary(self) -> Summary:
        dyn = self.stages.dynamo
        keys = {_break_identity(b) for b in dyn.graph_breaks}
        aot = sum(
            1
            for g in self.stages.aot_autograd.graphs
            for part in (g.joint, g.forward, g.backward, g.inference)
            if part is not None
        )
        return Summary(
            graphs=sum(1 for g in dyn.graphs if not g.backend_error),
            graph_breaks=len(dyn.graph_breaks),
            distinct_graph_breaks=len(keys),
            recompiles=len(dyn.recompiles),
            guards=sum(guards_per_compile(self.stages, self.compiles).values()),
            aot_graphs=aot,
            kernels=sum(len(o.kernels) for o in self.stages.inductor.outputs),
            compile_time_s=round(sum(c.entire_frame_compile_time_s for c in self.compiles) + _backward_s(self), 3),
            cache_hits=sum(1 for o in self.stages.inductor.outputs if o.cache == "hit"),
            cache_misses=sum(1 for o in self.stages.inductor.outputs if o.cache == "miss"),
            graphs_failed=len(dyn.backend_failures),
            calls_captured=self.coverage.calls_captured if self.coverage is not None else -1,
            unique_graphs=self.coverage.unique_graphs if self.coverage is not None else -1,
            fallbacks_to_eager=self.coverage.fallbacks_to_eager if self.coverage is not None else -1,
        )

    @property
    def ok(self) -> bool:
        return not self.error and all(
            s.status != FAILED for s in (self.stages.dynamo, self.stages.aot_autograd, self.stages.inductor)
        )

    def replace(self, **changes: Any) -> Report:
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        """One line: what ran and the headline counts (the whole tree is ``tcinspect.serialize.to_dict``)."""
        s, t = self.summary, self.target
        what = t.path or t.model_name or t.kind
        status = "ok" if self.ok else f"failed ({self.failure.kind})" if self.failure is not None else "failed"
        ranks = f", ranks={len(self.ranks)}" if self.ranks else ""
        return (f"Report(target={what!r}, torch={self.torch_version!r}, device={self.device!r}, "
                f"backend={self.options.backend!r}{ranks}, graphs={s.graphs}, graph_breaks={s.graph_breaks}, "
                f"recompiles={s.recompiles}, guards={s.guards}, kernels={s.kernels}, "
                f"compile_time_s={s.compile_time_s:g}, status={status!r})")

    def _repr_html_(self) -> str:
        """The report in a notebook cell: its findings, summary and every section with content."""
        from tcinspect import display

        return display.views().html(self)

    def show(self, stages: Optional[Union[str, Sequence[str]]] = None) -> None:
        """Print the tables ``tcinspect trace`` prints; ``stages`` picks some, as ``--stage`` does."""
        from tcinspect import display

        display.views().show(self, stages)

    def save(self, path: Union[str, os.PathLike[str]]) -> Path:
        """Write the report to ``path``: .yaml or .json (``tcinspect.load_report`` reads it back) or .html (the page)."""
        from tcinspect import display

        saved: Path = display.views().save(self, path)
        return saved


def _backward_s(rep: Report) -> float:
    """Backward compile time (bwd_compilation_metrics), which compilation_metrics does not include."""
    ct = rep.compile_time
    return sum(c.total_s for c in ct.compiles if c.part == "backward") if ct is not None else 0.0


def guards_per_compile(stages: Stages, compiles: tuple[CompileMetrics, ...]) -> dict[str, int]:
    """Leaf guards of each compile's guard tree: its graph's guards, or for a compile that made no
    graph (a frame that broke before its first op) the count recorded with it."""
    out = {c.compile_id: c.guard_count for c in compiles}
    out.update({g.compile_id: len(g.guards) for g in stages.dynamo.graphs})
    return out


def _break_identity(b: GraphBreak) -> tuple[str, str, int, str]:
    loc = b.user_frame
    return (b.break_type, loc.file if loc else "", loc.line if loc else 0, loc.function if loc else "")


def break_identity(b: GraphBreak) -> tuple[str, str, int, str]:
    """The key that makes two graph-break events the same break (type + user location)."""
    return _break_identity(b)


# ----------------------------------------------------------------------------- distributed runs


@dataclass(frozen=True)
class DdpBucket:
    """One child of a DDPOptimizer split: a subgraph and the parameters of its gradient bucket."""

    name: str  # the split graph's submodule, e.g. "submod_0"
    #: DDPOptimizer's bucket index (as its debug table numbers them): 0 is all-reduced first (the last layers).
    bucket: int
    parameters: tuple[str, ...] = ()  # e.g. "layers.0.0.weight"
    parameter_bytes: int = 0
    graph: Optional[Graph] = None  # optimize_ddp_split_child


@dataclass(frozen=True)
class DdpSplit:
    """DDPOptimizer's split of one Dynamo graph at DDP's bucket boundaries."""

    compile_id: str
    graph: Graph  # optimize_ddp_split_graph: the outer graph, calling each child in turn
    children: tuple[DdpBucket, ...] = ()


@dataclass(frozen=True)
class LogOrigin:
    """What a rank's TORCH_TRACE log says of the process that wrote it: compared across ranks to tell logs of
    one run from logs of several (``Report.mixed_runs``)."""

    #: its first record's date and time as glog writes it, "MM-DD HH:MM:SS.ffffff" (the writer's local time, no year)
    started: str = ""
    pid: int = 0  # the writer's process id (the glog prefix's)
    #: the rank its records state (torch adds ``"rank": N`` once the process group is up); None where none does
    records_rank: Optional[int] = None
    torch_version: str = ""  # compilation_metrics' pytorch_version; "" where torch did not log it
    #: where torch's own code logged each of a few events ("dynamo_start torch/_dynamo/convert_frame.py:231"):
    #: another line is another torch build, even where no version was logged
    torch_lines: tuple[str, ...] = ()
    #: the outermost frame of its first compile's stack ("/home/u/train.py:191"): where the script started it
    script: str = ""
    size: int = 0  # bytes of log text (gunzipped)
    crc32: str = ""  # of the log text, 8 hex digits


@dataclass(frozen=True)
class MixedRun:
    """A sign that the rank logs of a directory are not one run's: what differs, and which ranks have what."""

    #: started (first records an hour or more apart) | torch (another version, or another build's source lines)
    #: | script (another line of the script started the first compile) | process (one process wrote several
    #: ranks' logs) | copy (identical log text) | rank (the records state another rank than the file's)
    what: str
    #: the ranks of each kind ("process", "copy", "rank": only the ranks concerned)
    groups: tuple[RankGroup, ...]


@dataclass(frozen=True)
class RankReport:
    """One rank of a distributed run: how it ended, and its own stages."""

    rank: int
    #: ok | failed (a stage failed) | error (bad input, the model raised) | crashed | timed_out |
    #: stopped (ended by torchrun when another rank failed) | missing (never started)
    status: str
    error: str = ""
    #: The user's line it was at when it crashed, hung or was stopped ("file:line"), when known.
    where: str = ""
    device: str = ""
    stages: Stages = Stages()
    compiles: tuple[CompileMetrics, ...] = ()
    calls: int = 0
    input_errors: tuple[InputSetError, ...] = ()
    ddp_splits: tuple[DdpSplit, ...] = ()
    compile_time: Optional[CompileTime] = None
    #: TORCH_TRACE directories: the log this rank was read from (its name below the directory).
    log: str = ""
    #: TORCH_TRACE directories: what that log says of the process that wrote it (None for an ``--nproc`` rank).
    origin: Optional[LogOrigin] = None
    #: The compiled graphs this rank ran, in order (``Report.graph_execution_order``); () when torch logged none.
    graph_execution_order: tuple[str, ...] = ()

    @property
    def summary(self) -> Summary:
        # the same counts as a whole report's, from this rank's own stages
        return Report(torch_version="", device=self.device, target=Target(kind="rank"), stages=self.stages,
                      compiles=self.compiles, compile_time=self.compile_time).summary


@dataclass(frozen=True)
class RankGroup:
    """Ranks that agree on one aspect, and what they had."""

    ranks: tuple[int, ...]
    value: str


@dataclass(frozen=True)
class Divergence:
    """Where ranks differ: one aspect of one compile, and what each group of ranks had."""

    #: The compile id ("0/0"); "" for the run as a whole (e.g. one rank crashed).
    compile_id: str
    #: status | compile | graph | graph_breaks | guards | recompiles | kernels | ddp_split | cache (the FX
    #: graph and AOTAutograd cache outcomes of a compile the ranks agree on) | compile_ids (of the run) |
    #: execution_order (of the run: the first place where ranks ran their compiled graphs in another order)
    aspect: str
    groups: tuple[RankGroup, ...]


# ----------------------------------------------------------------------------- codegen --bench


@dataclass(frozen=True)
class Peak:
    """A roofline ceiling the kernels are compared with, and where its number comes from."""

    #: memory_bandwidth (theoretical) | copy_bandwidth (measured, the practical roof) | compute
    kind: str
    value: float
    unit: str  # "GB/s" (1e9 bytes per second) | "TFLOP/s" (1e12 FLOP per second)
    source: str  # how it was obtained, e.g. "device properties: 2619 MHz memory clock × 5120-bit bus × 2"
    dtype: str = ""  # compute peaks: bf16 | f16 | tf32 | f32 | f64


@dataclass(frozen=True)
class KernelTiming:
    """One kernel launch of the benchmarked call: its GPU time, what it moved, its place on the roofline."""

    compile_id: str
    part: str  # forward | backward | inference
    index: int  # its position in that output's kernels (OutputCode.kernels[index])
    name: str
    kind: str  # as Kernel.kind
    #: Median GPU time over ``runs`` runs, in microseconds, less KernelBench.launch_overhead_us;
    #: 0 when not timed (``note`` says why).
    median_us: float = 0.0
    min_us: float = 0.0
    runs: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    flops: int = 0  # matmul / convolution / attention work; 0 for other kernels
    dtype: str = ""  # the math the FLOPs ran in (bf16, f16, tf32, f32), which picks the compute peak
    gb_per_s: float = 0.0  # (bytes_read + bytes_written) / median time
    pct_of_bandwidth: float = 0.0  # of the theoretical memory bandwidth
    pct_of_copy: float = 0.0  # of the measured device-to-device copy bandwidth
    tflop_per_s: float = 0.0
    pct_of_compute: float = 0.0  # of the compute peak for ``dtype``
    #: memory | compute: the roof its arithmetic intensity puts it under; latency: too small to reach either
    bound: str = ""
    pct_of_roofline: float = 0.0  # achieved / attainable at its arithmetic intensity
    share: float = 0.0  # percent of the summed kernel time
    note: str = ""
    #: Its GPU time in the real step (µs, the median over StepProfile.steps profiled steps, all the GPU
    #: kernels it ran as, e.g. two for a cuBLAS call); 0 when not matched. Warm L2, real ordering.
    in_step_us: float = 0.0
    in_step_kernels: int = 0  # the GPU kernels this launch ran as in one step


@dataclass(frozen=True)
class StepGap:
    """A stretch of the step with the GPU idle, and the kernels on either side."""

    idle_us: float
    after: str  # "0/0 forward triton_poi_fused_add_0", or a kernel outside the compiled graphs
    before: str
    boundary: str = ""  # "graph boundary" when the two sides are different graphs (or one is outside them)


@dataclass(frozen=True)
class TimeShare:
    """GPU time of the step spent on kernels from one user line or one module."""

    key: str  # "file.py:12" or a module path
    us: float
    pct: float  # of the in-step kernel time of the compiled graphs


@dataclass(frozen=True)
class StepProfile:
    """The real compiled step under torch.profiler (CUPTI), kernel events matched to the catalog."""

    steps: int
    method: str
    wall_us: float  # median step: from the step's start on the CPU to the last kernel's end on the GPU
    gpu_busy_us: float  # union of the step's GPU kernel intervals
    gpu_busy_pct: float
    launches: int  # GPU kernels per step
    cpu_between_launches_us: float  # median CPU time from one kernel launch call to the next
    in_graph_us: float  # summed in-step time of the catalog's kernels
    outside_us: float  # GPU kernels outside the compiled graphs (eager code, optimizer, ...)
    outside_kernels: int
    verdict: str  # GPU-bound | launch-bound | CPU-bound between graphs
    evidence: str
    suggestion: str
    gaps: tuple[StepGap, ...] = ()
    by_line: tuple[TimeShare, ...] = ()
    by_module: tuple[TimeShare, ...] = ()


@dataclass(frozen=True)
class EndToEnd:
    """Eager against compiled: wall time per call, the median of ``runs`` synchronised calls."""

    what: str  # forward | forward+backward
    eager_ms: float
    compiled_ms: float
    speedup: float  # eager_ms / compiled_ms
    runs: int


@dataclass(frozen=True)
class KernelBench:
    """Every kernel of one compiled call timed on the GPU, against the device's peaks."""

    device_name: str  # e.g. "NVIDIA H100 80GB HBM3"
    runs: int
    method: str  # how each kernel was timed
    peaks: tuple[Peak, ...] = ()
    kernels: tuple[KernelTiming, ...] = ()  # in launch order
    end_to_end: tuple[EndToEnd, ...] = ()
    total_us: float = 0.0  # the summed median kernel time
    #: What timing one launch alone between CUDA events adds over its cost in a stream of launches
    #: (µs): measured with a 1-element kernel, subtracted from every time.
    launch_overhead_us: float = 0.0
    notes: tuple[str, ...] = ()
    step: Optional[StepProfile] = None  # the real step under the profiler (in-step times, where time goes)


# ----------------------------------------------------------------------------- compile time


@dataclass(frozen=True)
class Phase:
    """One timed span of the compiler (torch's ``dynamo_timed``), with the spans inside it."""

    name: str  # torch's event name: bytecode_tracing, backend_compile, GraphLowering.run, compile_file, ...
    #: dynamo | aot_autograd | graph_passes | lowering | scheduling | codegen | compile | autotune | cache |
    #: inductor | other (vocabulary.GROUPS)
    group: str
    start_s: float  # from the start of its compile's root span
    seconds: float  # inclusive
    #: exclusive: in no span inside it (for a span with children, shown as its "other")
    self_s: float
    children: tuple[Phase, ...] = ()


@dataclass(frozen=True)
class CacheKeyComponent:
    """One component of an FX graph cache key, as torch lists it: ``[hash] name: value``."""

    name: str  # e.g. gm, example_inputs[0], inductor_config[max_autotune], default_dtype
    hash: str
    value: str  # its first characters (the hash stands for all of it)


@dataclass(frozen=True)
class CacheLookup:
    """One look-up in a compile cache, as torch logged it."""

    cache: str  # fx_graph | aot_autograd | precompile
    part: str  # forward | backward | "" (the AOTAutograd cache holds both)
    state: str  # hit | miss | bypass | disabled
    reason: str = ""  # why it was bypassed, as torch says
    #: a hit: the compile time it saved, by torch's estimate (AOTAutograd's time_saved_ms; the FX graph
    #: cache's time_saved_ns, the time the entry took to compile)
    saved_s: float = 0.0
    key: str = ""  # the cache key torch looked up
    #: the key's components (the FX graph cache lists them; AOTAutograd's list is empty in 2.13-2.15)
    components: tuple[CacheKeyComponent, ...] = ()
    #: a miss: the compile time it took (the FX graph cache's time_taken_ns): what a warm start saves
    cost_s: float = 0.0
    #: a miss: "name: before → after" for each key component that differs from the last recorded run
    #: of the same graph (tcinspect's previous report of the model file, or a baseline); empty: none known
    changed: tuple[str, ...] = ()
    #: what the last recorded run was (a report's age and source), where ``changed`` was compared
    compared_with: str = ""
    #: remote-cache fields torch logged with the look-up, as "name: value"
    remote: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompileTiming:
    """Where one compile's time went: a Dynamo frame compile (forward) or its lazy backward compile."""

    compile_id: str
    part: str  # forward | backward | runtime (a span after the compile, e.g. runtime autotuning)
    function: str = ""
    start_s: float = 0.0  # from the start of the run's first compile
    #: torch's own measure (compilation_metrics entire_frame_compile_time_s; bwd_compilation_metrics
    #: duration), else the root span's length
    total_s: float = 0.0
    inductor_s: float = 0.0  # torch's inductor_compile_time_s for this part
    root: Optional[Phase] = None  # entire_frame_compile | entire_backward_compile
    #: spans of compile worker threads that overlapped it (kernels compiled in parallel): not in the sum
    workers: tuple[Phase, ...] = ()
    #: Dynamo's restart_reasons (first lines): each restart threw away the attempt before it
    restarts: tuple[str, ...] = ()
    caches: tuple[CacheLookup, ...] = ()
    before_restart_s: float = 0.0  # the time those attempts took (dynamo_time_before_restart_s)


@dataclass(frozen=True)
class CompileTimeFinding:
    """Something in the compile time that can be fixed, with what to do."""

    kind: str  # recompile | cache_bypass | cold_compile | cold_cache | compile_threads | restart | autotune
    compile_id: str
    seconds: float  # the time at stake
    message: str
    fix: str


@dataclass(frozen=True)
class CompileTime:
    """Every compile's phases (from torch's chromium_event spans), its caches, and what to do."""

    compiles: tuple[CompileTiming, ...] = ()
    findings: tuple[CompileTimeFinding, ...] = ()
    compile_threads: int = 0  # Inductor's compile_threads (0: not recorded)
    #: spans that could not be placed: an end without its start, a start without its end
    unmatched_spans: int = 0

    @property
    def total_s(self) -> float:
        return round(sum(c.total_s for c in self.compiles if c.part != "runtime"), 6)


# ----------------------------------------------------------------------------- dynamic shapes


@dataclass(frozen=True)
class ShapeSymbol:
    """A symbol the compiler made for a size or a value (torch's create_symbol / create_unbacked_symbol)."""

    compile_id: str
    symbol: str  # torch's name: s27 (a size, backed by a hint), u0 (unbacked: .item(), nonzero, ...)
    source: str = ""  # what it stands for, e.g. "L['x'].size()[1]"; "" for an unbacked symbol
    hint: str = ""  # the value it was created with ("" for an unbacked symbol)
    value_range: str = ""  # as torch states it, e.g. "[2, int_oo]"
    unbacked: bool = False
    user_frame: Optional[SourceLocation] = None  # the user line torch was tracing when it made it


@dataclass(frozen=True)
class Specialization:
    """A symbol that became a constant (torch's symbolic_shape_specialization): the dim is static."""

    compile_id: str
    symbol: str
    sources: tuple[str, ...]
    value: str
    reason: str  # torch's words, e.g. "range_refined_to_singleton"
    user_frame: Optional[SourceLocation] = None  # the user line that forced it
    library_frame: Optional[SourceLocation] = None  # the innermost torch frame that made it a constant


@dataclass(frozen=True)
class ShapeGuard:
    """A guard on symbols the compiler added while tracing (torch's guard_added_fast), with its user line."""

    compile_id: str
    expression: str  # e.g. "Eq(s27, 24)", "u0 >= 0"
    user_frame: Optional[SourceLocation] = None
    sources: tuple[str, ...] = ()  # "s27: L['x'].size()[1]" for each symbol of this compile it names
    #: the stage whose code added it, read from torch's stack: dynamo | aot_autograd | inductor | "" (not known)
    stage: str = ""
    #: whether the compile's final guards (those Dynamo installed) state it: "yes", "no", or "" where the compile
    #: logged none. A "no" is a guard torch evaluated (or suppressed, or simplified into another) that no later
    #: call checks: not a specialization
    in_final_guards: str = ""


@dataclass(frozen=True)
class DataDependentError:
    """A guard on an unbacked symbol the compiler could not decide (torch's guard_on_data_dependent_error)."""

    compile_id: str
    expression: str
    unhinted: str = ""
    user_frame: Optional[SourceLocation] = None


@dataclass(frozen=True)
class InputShape:
    """The shape of one tensor input of one model call, as tcinspect observed it."""

    call: int  # 0: example_inputs, k: input_sets[k - 1]
    name: str  # the argument as Dynamo's source names it: "x" for L['x'], "args[0]" for L['args'][0]
    shape: tuple[int, ...] = ()
    label: str = ""  # the parameter's own name where a decorator's *args hides it (e.g. input_ids)


@dataclass(frozen=True)
class Shapes:
    """Dynamic shapes of a run: what torch made symbolic, what it specialized, and the inputs observed."""

    symbols: tuple[ShapeSymbol, ...] = ()
    specializations: tuple[Specialization, ...] = ()
    guards: tuple[ShapeGuard, ...] = ()
    data_dependent: tuple[DataDependentError, ...] = ()
    inputs: tuple[InputShape, ...] = ()


@dataclass(frozen=True)
class LambdaGuard:
    """A guard Dynamo evaluates in Python (a LAMBDA_GUARD), and where it sits in the guard tree."""

    expression: str
    #: root: a leaf of the RootGuardManager, checked first; epilogue: the root's epilogue lambda guards, checked
    #: after the whole tree; leaf: under the guard manager of ``source``
    placement: str
    source: str = ""
    user_code: str = ""


@dataclass(frozen=True)
class CompileGuardCost:
    """One compile's guard cost, as torch measured it when it built the guards."""

    compile_id: str
    function: str = ""
    #: compilation_metrics ``guard_latency_us`` (torch truncates to whole microseconds); None: not recorded
    guard_latency_us: Optional[float] = None
    #: the ``Guard latency = … us`` line ending ``dynamo_cpp_guards_str`` (two decimals); None: not recorded
    printed_latency_us: Optional[float] = None
    lambda_guards: tuple[LambdaGuard, ...] = ()
    #: guard managers printed with tag_safe=(…, True): roots whose dict tags let Dynamo skip their subtree
    tag_safe_roots: int = 0


@dataclass(frozen=True)
class CallCost:
    """One call of the compiled model timed under torch.profiler (CPU activity), forward only."""

    input_set: int  # 0: example_inputs, k: input_sets[k - 1]
    call_us: float  # the call's CPU time: tcinspect's record_function span around it
    lookup_us: float  # the "TorchDynamo Cache Lookup" events inside it, summed
    lookups: int  # how many there were (one per frame Dynamo looked up)
    #: from the call's start to the start of its first ATen op; None when it ran none
    before_first_op_us: Optional[float] = None
    #: the compiled regions it ran ("Torch-Compiled Region: 0/1" events), in order
    compile_ids: tuple[str, ...] = ()
    #: cache entries Dynamo had to try, per frame: the position of the entry that ran in the frame's
    #: cache-entry list read just before the call, plus one
    entries_tried: tuple[int, ...] = ()


@dataclass(frozen=True)
class FrameCacheEntries:
    """A compiled frame's cache entries after the capture, in the order Dynamo tries them."""

    function: str
    file: str = ""
    line: int = 0
    compile_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class PerCallCost:
    """``guards --per-call``: calls of the compiled model timed after compiling."""

    runs: int  # timed calls per input set (each after one untimed warm-up call)
    calls: tuple[CallCost, ...] = ()
    frames: tuple[FrameCacheEntries, ...] = ()
    #: compiles that happened during the timed calls (their calls are not timing the steady state)
    compiled_during: tuple[str, ...] = ()
    note: str = ""  # why nothing was measured, when nothing was


@dataclass(frozen=True)
class GuardCost:
    """What the guards cost: per compile (torch's own latency) and, when asked, per call (the profiler)."""

    compiles: tuple[CompileGuardCost, ...] = ()
    per_call: Optional[PerCallCost] = None
# ----------------------------------------------------------------------------- regional compilation


@dataclass(frozen=True)
class RegionCall:
    """One call of a compiled region, and whether it reused a subgraph an earlier call compiled."""

    #: nested_compile_region: the invoke_subgraph identifier that ran it ("subgraph_1");
    #: compiled_block: the compile id of the compile it made
    subgraph: str
    compile_id: str  # the compile whose graph holds the call (nested) or that the call made (compiled_block)
    reused: bool = False
    node: str = ""  # the invoke_subgraph node in Dynamo's graph (nested)
    user_line: str = ""  # "file:line" of the call
    module: str = ""  # the block it ran for ("model.layers.1"), read from its parameters' names where it has any
    #: its tensor inputs as the graph prints them, parameters left out: "graph input l_x_ f32[4, 16] (16, 1) cpu"
    inputs: tuple[str, ...] = ()
    #: a call that compiled again: what differed from the subgraph it could have reused (input properties,
    #: the failed guards of a recompile), or what torch leaves unsaid
    differed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Region:
    """A function compiled as a region: its calls, the distinct subgraphs compiled for them, what was reused."""

    kind: str  # nested_compile_region (invoke_subgraph) | compiled_block (a block's forward compiled on its own)
    function: str  # the region's function, e.g. "forward"
    where: str  # "file:line" of the region's first traced line (nested) or its code (compiled_block)
    #: calls torch records: each invoke_subgraph node (nested); -1 for a compiled block, whose calls served from
    #: Dynamo's cache torch does not record
    calls: int
    distinct: int  # distinct subgraphs compiled: identifiers (nested) or compiles of the code (compiled_block)
    compile_ids: tuple[str, ...] = ()
    region_calls: tuple[RegionCall, ...] = ()
    #: compiled_block: the seconds its compiles took (compilation_metrics); -1 where torch does not time the
    #: region alone (a nested region is traced inside its frame's compile)
    compile_time_s: float = -1.0
    recompile_time_s: float = -1.0  # of that, the compiles after the first: what failed reuse cost
    kernels: int = -1  # kernels Inductor made for it, where provenance states it; -1: not stated
    note: str = ""

    @property
    def reused_calls(self) -> int:
        return sum(1 for c in self.region_calls if c.reused)

    @property
    def reuse(self) -> Optional[float]:
        """The share of calls served by a subgraph compiled for an earlier call; None where calls are unknown."""
        return round(self.reused_calls / self.calls, 4) if self.calls > 0 else None


@dataclass(frozen=True)
class Regions:
    """Every region of the run."""

    regions: tuple[Region, ...] = ()
# ----------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class SavedTensor:
    """One output of an AOT forward graph that the backward graph takes as input (saved for backward)."""

    name: str  # the forward-graph node
    #: parameter (a module's parameter or buffer) | input (another graph input) | activation (computed)
    kind: str
    dtype: str
    shape: tuple[str, ...]
    #: Bytes of the storage it is the first saved tensor to keep alive (numel x element size of the node that
    #: allocated it), at the traced hint of each symbol; 0 when it is a view of a storage already counted.
    bytes: int
    bytes_expr: str = ""  # the same with symbolic sizes, e.g. "256*s0"; "" when static
    storage: str = ""  # the node that allocated its storage, when that is another node (it is a view)
    op: str = ""  # what produced it, e.g. "aten.mm"; "" for a graph input
    module: str = ""  # module path (e.g. model.layers.0.mlp); a parameter's own module
    parameter: str = ""  # a parameter's or buffer's name within the model, e.g. model.layers.0.mlp.up.weight
    line: str = ""  # "file:line" of the user code the node came from
    code: str = ""  # that line's text


@dataclass(frozen=True)
class InductorPeak:
    """Inductor's own estimate of one graph's peak memory (bytes), as its peak-memory reordering computed it."""

    part: str  # forward | backward | inference
    aot_id: str = ""
    #: bytes per ordering method Inductor tried: baseline (its order before reordering) first
    methods: tuple[tuple[str, int], ...] = ()

    @property
    def chosen(self) -> int:
        """The lowest estimate: the order Inductor keeps."""
        return min((b for _, b in self.methods), default=0)


@dataclass(frozen=True)
class GraphMemory:
    """What one compiled frame's forward graph keeps alive for its backward graph."""

    compile_id: str
    saved: tuple[SavedTensor, ...] = ()
    #: symbols of the graph and their traced hints ("s0", "8")
    hints: tuple[tuple[str, str], ...] = ()
    #: forward nodes the backward graph computes again (the partitioner chose to recompute, not save them)
    recomputed: tuple[str, ...] = ()
    #: activation_memory_budget as the partitioner's min_cut_information states it (-1: not stated)
    memory_budget: float = -1.0
    inductor_peaks: tuple[InductorPeak, ...] = ()
    #: why module paths are missing, when they are (e.g. the graph came from the AOTAutograd cache)
    note: str = ""

    @property
    def saved_bytes(self) -> int:
        return sum(t.bytes for t in self.saved)

    def bytes_of(self, kind: str) -> int:
        return sum(t.bytes for t in self.saved if t.kind == kind)

    @property
    def saved_bytes_expr(self) -> str:
        """The total with symbolic sizes ("" when every size is static)."""
        if not any(t.bytes_expr for t in self.saved):
            return ""
        const, terms = 0, dict[str, int]()  # like terms collected: "256*s0" + "4*s0" -> "260*s0"
        for t in self.saved:
            if not t.bytes_expr:
                const += t.bytes
                continue
            coef, _, rest = t.bytes_expr.partition("*")
            if coef.isdigit() and rest:
                terms[rest] = terms.get(rest, 0) + int(coef)
            else:
                terms[t.bytes_expr] = terms.get(t.bytes_expr, 0) + 1
        parts = [f"{c}*{e}" if c != 1 else e for e, c in terms.items()]
        return " + ".join(parts + ([str(const)] if const else []))


@dataclass(frozen=True)
class MemoryMeasurement:
    """One training step (forward + backward), compiled and eager, measured by the CUDA caching allocator."""

    device_name: str
    method: str
    #: torch.cuda.max_memory_allocated() over the step, stats reset just before it (bytes, absolute)
    compiled_peak: int = 0
    eager_peak: int = 0
    #: memory_allocated() when the step began (parameters, inputs, what the model keeps): both peaks include it
    compiled_start: int = 0
    eager_start: int = 0
    #: memory_allocated() after the forward, less at its start: what the forward left alive for backward
    compiled_forward_end: int = 0
    eager_forward_end: int = 0
    #: bytes of the CUDA-graph memory pool(s) (mode reduce-overhead), from torch.cuda.memory_snapshot()
    cudagraph_pool: int = 0
    notes: tuple[str, ...] = ()

    @property
    def peak_ratio(self) -> float:
        """Compiled peak over eager peak, both above the step's start (0 when not measured)."""
        eager = self.eager_peak - self.eager_start
        return round((self.compiled_peak - self.compiled_start) / eager, 4) if eager > 0 else 0.0


@dataclass(frozen=True)
class Memory:
    """``tcinspect memory``: saved-for-backward bytes per graph, and peaks where torch gives them."""

    graphs: tuple[GraphMemory, ...] = ()
    measured: Optional[MemoryMeasurement] = None
    #: why nothing was measured (a CPU run, no backward), said rather than guessed
    not_measured: str = ""

    @property
    def saved_bytes(self) -> int:
        return sum(g.saved_bytes for g in self.graphs)


@dataclass(frozen=True)
class IgnoredFile:
    """A file of a TORCH_TRACE directory that was not read, and why."""

    #: its name below the directory
    name: str
    reason: str


@dataclass(frozen=True)
class Request:
    """A report to obtain (``tcinspect.obtain``): where from (``file``) and, when it must be captured, what to
    run. Built once by a command (or a library caller), checked when built, and handed whole to the capture,
    the capture's child process and every rank (``to_json``/``from_json``).

    Args:
        file: a model file or script (.py), a saved report (.yaml/.json), a TORCH_TRACE log or directory of
            rank logs; None for the latest report in the cache.
        compile: the torch.compile options.
        verify, export, bench: the optional requests of ``tcinspect verify``, ``export`` and ``codegen --bench``.
        model_name: the model object's name; None is ``model`` with the mode decided by the file, a name given
            forces model mode. ``script`` forces script mode, with ``script_args`` as its sys.argv.
        fresh: recompile cold in a private cache and ignore cached reports.
        timeout: seconds before the capture (or the whole --nproc job) is stopped.
        nproc: run the file on this many ranks under torchrun; ``launcher_args`` go to torchrun.
        rank: one rank of a distributed report or TORCH_TRACE directory.
        strict: anything the parser did not understand is an error (exit 2).
        isolate: compile in a child process, so that a native crash is a report (the CLI's default).
        quiet: silence torch's own log output while compiling.
        also_accept: other recorded options whose cached reports answer this request too.
        per_call: ``guards --per-call N``: after compiling, time N calls per input set under torch.profiler.
        jobs: processes that read the rank logs of a TORCH_TRACE directory (default: one per idle core).
        measure_memory: on a CUDA device, measure one training step's peak memory compiled and eager after
            compiling (``memory``, ``check --max-peak-ratio``); a capture that does not ask runs no extra step.

    Raises:
        tcinspect.errors.UsageError: options that contradict each other (``script`` with ``model_name``,
            ``compile.mode`` with a backend or pass of the user's own).
    """

    file: Optional[str] = None
    compile: CompileOptions = field(default_factory=CompileOptions)
    verify: Optional[VerifyRequest] = None
    export: Optional[ExportRequest] = None
    bench: Optional[BenchRequest] = None
    model_name: Optional[str] = None
    inputs_name: str = "example_inputs"
    script: bool = False
    script_args: tuple[str, ...] = ()
    fresh: bool = False
    timeout: Optional[float] = None
    nproc: Optional[int] = None
    launcher_args: tuple[str, ...] = ()
    rank: Optional[int] = None
    strict: bool = False
    isolate: bool = True
    quiet: bool = True
    also_accept: tuple[Options, ...] = field(default=(), compare=False)
    per_call: int = 0
    jobs: Optional[int] = None
    measure_memory: bool = False

    def __post_init__(self) -> None:
        for name, part in (("compile", CompileOptions), ("verify", VerifyRequest), ("export", ExportRequest),
                           ("bench", BenchRequest)):  # a part given as a word or a flag is a mistake made here
            value = getattr(self, name)
            if not isinstance(value, part) and (value is not None or name == "compile"):
                raise UsageError(f"{name}={value!r} is not a {part.__name__}",
                                 f"pass {name}={part.__name__}(...), e.g. {_PART_EXAMPLES[name]}")
        for name in ("script_args", "launcher_args", "also_accept"):  # a list (or None) is taken as its tuple
            value = getattr(self, name)
            if isinstance(value, str):
                raise UsageError(f"{name}={value!r} is one string, not a sequence of them", f"pass {name}=({value!r},)")
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value or ()))
        # in Python's words, the parameters' names (the CLI checks its options before, in its own: cli/common.py)
        c = self.compile
        if c.mode and c.runs_user_code:
            raise UsageError(f"CompileOptions(mode={c.mode!r}) configures Inductor's own backend, not "
                             f"backend={c.backend!r} or passes={c.passes!r}",
                             "leave out mode=, or use backend='inductor' without passes=")
        if self.script and self.model_name is not None:
            raise UsageError(f"script=True runs the file as a script and model_name={self.model_name!r} as a model "
                             "file; they contradict", "pass one of them")
        if self.per_call < 0:
            raise UsageError(f"per_call={self.per_call} is negative", "pass per_call=N with N >= 0")

    @property
    def options(self) -> Options:
        """The options as the report records them."""
        # the request's own recorded fields (per_call, measure_memory) under their names
        own = {name: getattr(self, name) for name in _RECORDED_REQUEST_FIELDS}
        return dataclasses.replace(Options.of(self.compile, self.verify, self.export, self.bench), **own)

    @property
    def as_script(self) -> Optional[bool]:
        """Script mode forced (True), model mode forced (False, a model name given), or decided by the file (None)."""
        return True if self.script else (False if self.model_name is not None else None)

    @property
    def model(self) -> str:
        """The model object's name in the file (``model`` unless one was given)."""
        return self.model_name or "model"

    def to_json(self) -> str:
        """The request as one JSON document, for a capture's child process or a rank (``from_json`` reads it)."""
        import json

        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Request:
        """The request ``to_json`` wrote, every nested option class and tuple typed again (and checked)."""
        import json

        built = _typed(cls, json.loads(text))
        assert isinstance(built, Request)
        return built


#: The Request fields the report's Options records under the same name, besides the parts ``Options.of`` flattens.
_RECORDED_REQUEST_FIELDS = tuple(sorted({f.name for f in dataclasses.fields(Options)}
                                        & {f.name for f in dataclasses.fields(Request)}
                                        - {"compile", "verify", "export", "bench"}))

#: How each part of a Request is spelled, for the fix line of a part given as something else.
_PART_EXAMPLES = {"compile": "compile=CompileOptions(backend='eager')", "verify": "verify=VerifyRequest(rtol=1e-3)",
                  "export": "export=ExportRequest(modes=('strict',))", "bench": "bench=BenchRequest(runs=100)"}


def _typed(tp: Any, value: Any) -> Any:
    """``value`` (plain JSON) as the annotated type ``tp``: dataclasses, Optional, tuples; other values as they are."""
    origin = get_origin(tp)
    if origin is Union:
        if value is None:
            return None
        return _typed(next(a for a in get_args(tp) if a is not type(None)), value)
    if origin is tuple:
        return tuple(_typed(get_args(tp)[0], v) for v in value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        unknown = set(value) - {f.name for f in dataclasses.fields(tp)}
        if unknown:
            raise ValueError(f"{tp.__name__} has no field {sorted(unknown)[0]!r}")
        return tp(**{k: _typed(hints[k], v) for k, v in value.items()})
    return value
