"""What the guards cost on every call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


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
