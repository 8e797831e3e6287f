"""What each AOT forward saves for backward, Inductor's peak estimates and the measured peaks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


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
