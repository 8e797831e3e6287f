"""The report: a pure, frozen data model of one torch.compile run.

Holds only strings, numbers, booleans, tuples and other model classes, so that renderers,
checks and saved-report readers never need torch. Keys reuse PyTorch's artifact names where
one exists (``dynamo_output_graph``, ``aot_forward_graph``, ``inductor_output_code``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

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


@dataclass(frozen=True)
class DynamoGraph:
    """A graph Dynamo captured for one compiled frame, with its guards."""

    compile_id: str
    function: str
    file: str
    line: int
    graph: Graph
    guards: tuple[Guard, ...] = ()


@dataclass(frozen=True)
class Recompile:
    """A compile of a frame that had compiled before: why its cached code was rejected."""

    compile_id: str
    function: str
    #: The failed guard of each earlier cache entry, as PyTorch reports them (newest first).
    reasons: tuple[str, ...]
    #: Which call triggered it: 0 for example_inputs, k for input_sets[k - 1]; -1 unknown.
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


@dataclass(frozen=True)
class AotGraphs:
    """AOTAutograd's graphs for one compiled frame."""

    compile_id: str
    joint: Optional[Graph] = None  # aot_joint_graph
    forward: Optional[Graph] = None  # aot_forward_graph
    backward: Optional[Graph] = None  # aot_backward_graph
    inference: Optional[Graph] = None  # aot_inference_graph


@dataclass(frozen=True)
class AotStage:
    status: str = NOT_RUN
    error: str = ""
    graphs: tuple[AotGraphs, ...] = ()


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


@dataclass(frozen=True)
class OutputCode:
    """Inductor's output code for one AOT graph (forward, backward or inference)."""

    compile_id: str
    aot_id: str  # PyTorch's "AOT ID", e.g. "0_forward"
    part: str  # forward | backward | inference
    wrapper: str  # inductor_output_code: the whole generated module
    kernels: tuple[Kernel, ...] = ()
    post_grad_graph: Optional[Graph] = None  # inductor_post_grad_graph
    cache: str = ""  # fx graph cache: hit | miss | bypass | ""


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


@dataclass(frozen=True)
class Options:
    """The torch.compile options the capture used."""

    backend: str = "inductor"
    mode: str = ""
    fullgraph: bool = False
    dynamic: str = ""  # "" (torch's default) | "true" | "false"
    backward: bool = True
    device: str = ""


@dataclass(frozen=True)
class Summary:
    """The headline counts. See the README for the definition of a graph break."""

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
    #: How many calls were made: example_inputs plus each input set that was run.
    calls: int = 0
    input_errors: tuple[InputSetError, ...] = ()
    tcinspect_version: str = ""
    schema_version: int = SCHEMA_VERSION
    #: Seconds spent compiling (wall), kept apart so that reports diff cleanly.
    timings: tuple[tuple[str, float], ...] = field(default=(), compare=False)

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
            graphs=len(dyn.graphs),
            graph_breaks=len(dyn.graph_breaks),
            distinct_graph_breaks=len(keys),
            recompiles=len(dyn.recompiles),
            guards=sum(len(g.guards) for g in dyn.graphs),
            aot_graphs=aot,
            kernels=sum(len(o.kernels) for o in self.stages.inductor.outputs),
            compile_time_s=round(sum(c.entire_frame_compile_time_s for c in self.compiles), 3),
            cache_hits=sum(1 for o in self.stages.inductor.outputs if o.cache == "hit"),
            cache_misses=sum(1 for o in self.stages.inductor.outputs if o.cache == "miss"),
        )

    @property
    def ok(self) -> bool:
        return not self.error and all(
            s.status != FAILED for s in (self.stages.dynamo, self.stages.aot_autograd, self.stages.inductor)
        )

    def replace(self, **changes: object) -> "Report":
        return dataclasses.replace(self, **changes)


def _break_identity(b: GraphBreak) -> tuple[str, str, int, str]:
    loc = b.user_frame
    return (b.break_type, loc.file if loc else "", loc.line if loc else 0, loc.function if loc else "")


def break_identity(b: GraphBreak) -> tuple[str, str, int, str]:
    """The key that makes two graph-break events the same break (type + user location)."""
    return _break_identity(b)
