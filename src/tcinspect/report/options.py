"""What a capture is asked for and records: the compile options, and the verify / export / bench requests."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, Optional, get_args

from tcinspect.errors import UsageError
from tcinspect.report.stages import is_user_target

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
