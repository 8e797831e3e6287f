"""A report to obtain (``tcinspect.obtain``): where from and, when it must be captured, what to run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional, Union, get_args, get_origin, get_type_hints

from tcinspect.errors import UsageError
from tcinspect.report.options import BenchRequest, CompileOptions, ExportRequest, Options, VerifyRequest


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
