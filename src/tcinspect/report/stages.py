"""The compiler's stages as recorded: Dynamo's graphs, guards, breaks and recompiles, AOTAutograd's graphs, Inductor's output code and kernels; each compile's metrics and the run's target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

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
