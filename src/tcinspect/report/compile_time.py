"""Where compile time went, phase by phase, and the compile caches' look-ups."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


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
