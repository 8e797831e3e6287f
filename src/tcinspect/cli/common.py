"""What every command shares: options (declared once), the report source, and output."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, get_args

import typer
from rich.console import Console, RenderableType

from tcinspect.capturing.prewarm import in_process_asked
from tcinspect.errors import ExitCode, ReportFailedError, UsageError
from tcinspect.report import CompileOptions, Report, Request

EXIT_CODES_HELP = (
    "Exit codes: 0 ok · 1 a check failed (check, verify mismatch, export failure, ranks diverged) · 2 bad input "
    "(usage, model file, inputs, saved report, a model that raises, a --backend/--pass target that fails) · 3 a "
    "compiler stage failed (the partial report is still shown) · 4 the capture (or a rank) crashed or ran past "
    "--timeout · 70 internal error · 130 interrupted (SIGINT, Ctrl-C) · 143 stopped (SIGTERM); an interrupted run "
    "writes no output file."
)


#: The output formats of the commands whose output is their own document (a command with pages adds them).
Format = Literal["table", "yaml", "json"]


def choice(flag: str, words: Sequence[str], fix: str = "", lower: bool = True) -> Callable[[str], str]:
    """An option's check of its value against its vocabulary ``words``, run by Typer while it parses the command
    line: the value (lower-cased), or one line naming the value and the word most likely meant (exit 2)."""
    def check(value: str) -> str:
        word = value.lower() if lower else value
        if word not in words:
            raise UsageError(f"{flag} {word!r} is not one of {', '.join(words)}",
                             fix or f"pass {flag} {_nearest(word, words)}")
        return word

    return check


def dynamic_choice(value: str) -> str:
    """``--dynamic``: true, false or auto (torch's default, which CompileOptions spells ""), any case."""
    word = value.lower()
    if word not in ("true", "false", "auto", ""):
        raise UsageError(f"--dynamic {word!r} is not one of true, false, auto", "pass --dynamic true, false or auto")
    return "" if word == "auto" else word


FileArg = Annotated[Optional[str], typer.Argument(
    help="A model file (.py), a saved report (.yaml/.json), a TORCH_TRACE log or directory of rank logs, or "
         "nothing for the latest trace.", show_default=False)]
ScriptArgs = Annotated[Optional[list[str]], typer.Argument(
    help="Arguments after `--` become the script's sys.argv (script mode).", show_default=False)]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, yaml or json.",
                                        callback=choice("--format", get_args(Format)))]
OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the full report to this file (.yaml or .json; - for stdout).",
                                                   show_default=False)]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", help="Name of the model object in the model file (default: model); forces model mode.",
    show_default=False)]
ScriptOpt = Annotated[bool, typer.Option(
    "--script", help="Run the file as a script (as __main__) even if it defines `model` at module level.")]
InputsOpt = Annotated[str, typer.Option("--inputs", help="Name of the example-inputs object in the model file.")]


def device_choice(value: str) -> str:
    """``--device``: cpu, cuda or cuda:N (CompileOptions checks it too, in Python's words)."""
    if value and value not in ("cpu", "cuda") and not value.startswith("cuda:"):
        raise UsageError(f"--device {value!r} is not cpu or cuda", "pass --device cpu or --device cuda")
    return value


DeviceOpt = Annotated[str, typer.Option("--device", help="Move the module and tensor inputs to cpu or cuda.",
                                        callback=device_choice, show_default=False)]
ModeOpt = Annotated[str, typer.Option("--mode", help="torch.compile mode (default, reduce-overhead, max-autotune, ...).",
                                      show_default=False)]
FullgraphOpt = Annotated[bool, typer.Option("--fullgraph", help="Pass fullgraph=True to torch.compile.")]
DynamicOpt = Annotated[str, typer.Option("--dynamic", help="Pass dynamic= to torch.compile: true, false or auto.",
                                         callback=dynamic_choice,
                                         show_default=False)]
BackendOpt = Annotated[str, typer.Option(
    "--backend", help="A registered torch.compile backend name, or your own: module:callable or file.py:callable.")]
PassOpt = Annotated[Optional[list[str]], typer.Option(
    "--pass", help="An FX pass (GraphModule -> GraphModule), module:fn or file.py:fn, applied to each ATen graph "
                   "before Inductor (or aot_eager); repeatable, applied in order.", show_default=False)]
NoBackwardOpt = Annotated[bool, typer.Option("--no-backward", help="Do not run backward (no backward graph or code).")]
FreshOpt = Annotated[bool, typer.Option("--fresh", help="Recompile cold in a private cache; ignore cached reports.")]


def _debug(value: bool) -> bool:
    if value:
        DEBUG.append(True)  # the error boundary shows tracebacks (tcinspect.cli.main)
    return value


#: Set when --debug was given, before the command (``tcinspect --debug COMMAND``) or as a command's option (parsed
#: first, so that an error in another option shows its traceback).
DEBUG: list[bool] = []
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.", callback=_debug, is_eager=True)]
TimeoutOpt = Annotated[Optional[float], typer.Option(
    "--timeout", help="Compile in a child process and stop it after this many seconds (a crash or hang is "
                      "then one error, exit 4, with the stages recorded before it).", show_default=False, min=1)]
NprocOpt = Annotated[Optional[int], typer.Option(
    "--nproc", help="Run the file on N ranks under torchrun (python -m torch.distributed.run --standalone "
                    "--nproc-per-node N), record every rank and report where ranks diverge; the file starts its "
                    "own process group. --timeout then bounds the whole job.", show_default=False, metavar="N")]
TorchrunArgOpt = Annotated[Optional[list[str]], typer.Option(
    "--torchrun-arg", help="With --nproc: an option for torchrun, e.g. --torchrun-arg=--master-port=29501 "
                           "(a rendezvous option replaces --standalone); repeatable.", show_default=False,
    metavar="ARG")]

RankOpt = Annotated[Optional[int], typer.Option(
    "--rank", help="Show one rank of a TORCH_TRACE directory, a distributed report or an --nproc run.",
    show_default=False, metavar="N", min=0)]
StrictOpt = Annotated[bool, typer.Option(
    "--strict", help="Exit 2 when a TORCH_TRACE log (or any report) has lines, payloads or events tcinspect did "
                     "not understand, instead of a warning (a failed run still ends with its failure's code).")]
JobsOpt = Annotated[Optional[int], typer.Option(
    "--jobs", "-j", help="Processes that read the rank logs of a TORCH_TRACE directory in parallel (default: one per "
                         "core that other processes are not keeping busy).", show_default=False, metavar="N", min=1)]

err_console = Console(stderr=True, highlight=False, emoji=False)


#: The capture options every command may take, declared once: (option, default), under the name of the Request
#: or CompileOptions field each one sets (``no_backward`` sets ``backward``; ``debug`` is the CLI's own). A command
#: names those it takes with ``capture_options``; the ones it does not take keep these defaults in its Request.
CAPTURE_OPTIONS: dict[str, tuple[Any, Any]] = {
    "model_name": (ModelOpt, None), "script": (ScriptOpt, False), "inputs_name": (InputsOpt, "example_inputs"),
    "device": (DeviceOpt, ""), "backend": (BackendOpt, "inductor"), "passes": (PassOpt, None),
    "mode": (ModeOpt, ""), "fullgraph": (FullgraphOpt, False), "dynamic": (DynamicOpt, ""),
    "no_backward": (NoBackwardOpt, False), "fresh": (FreshOpt, False), "timeout": (TimeoutOpt, None),
    "nproc": (NprocOpt, None), "launcher_args": (TorchrunArgOpt, None), "rank": (RankOpt, None),
    "strict": (StrictOpt, False), "jobs": (JobsOpt, None), "debug": (DebugOpt, False),
}

#: Another backend's help for the commands that need only Dynamo (breaks, guards, shapes).
DynamoBackendOpt = Annotated[str, typer.Option("--backend", help="Backend for a new capture (Dynamo only by default).")]
#: ``--dynamic``'s shorter help (guards, shapes).
ShortDynamicOpt = Annotated[str, typer.Option("--dynamic", help="true, false or auto (torch's default).",
                                              callback=dynamic_choice)]


_REQUEST_FIELDS = frozenset(f.name for f in fields(Request)) - {"file", "script_args", "compile"}
_TUPLE_FIELDS = frozenset(f.name for f in fields(Request) if f.default == ())
_COMPILE_FIELDS = frozenset(f.name for f in fields(CompileOptions)) - {"backward"}


@dataclass(frozen=True)
class Capture:
    """The shared capture options a command was given (``capture_options``), turned into one Request."""

    values: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    def compile(self, **changes: Any) -> CompileOptions:
        """The compile options, each under its CompileOptions field's name (``no_backward`` sets ``backward``);
        CompileOptions checks them."""
        v = {**self.values, **changes}
        # a compile field no command takes as an option (dynamo_config: breaks --try-fixes sets it) keeps its default
        given: dict[str, Any] = {k: tuple(v[k] or ()) if k == "passes" else v[k] for k in _COMPILE_FIELDS if k in v}
        return CompileOptions(**given, backward=not v["no_backward"])

    def request(self, file: Optional[str], script_args: Optional[Sequence[str]] = None, **fields: Any) -> Request:
        """The command's Request: the file, these options (each under its field's own name), and the command's own
        ``fields`` (verify, per_call, ...)."""
        # a repeatable option not given is None, its field the empty tuple
        given = {k: tuple(v or ()) if k in _TUPLE_FIELDS else v for k, v in self.values.items() if k in _REQUEST_FIELDS}
        opts = fields.get("compile") or self.compile()
        # the Request refuses these too, in Python's words (its parameters); here they are the options given
        if given.get("script") and given.get("model_name") is not None:
            raise UsageError("--script runs the file as a script and --model NAME as a model file; they contradict",
                             "pass one of them")
        if opts.mode and opts.runs_user_code:
            raise UsageError(f"--mode {opts.mode} configures Inductor's own backend, not --backend {opts.backend} / "
                             "--pass", "leave out --mode, or use the inductor backend without --pass")
        return Request(file=file, script_args=tuple(script_args or ()), **{"compile": self.compile(), **given, **fields})

    def obtain(self, file: Optional[str], script_args: Optional[Sequence[str]] = None, **fields: Any) -> Report:
        # --debug before the command (the root's, tcinspect --debug COMMAND) or after it
        return obtain(self.request(file, script_args, **fields), self.values["debug"] or bool(DEBUG))


#: Named groups of the shared capture options, in their --help order: a command names the groups it takes.
MODEL_FILE = "model_name script inputs_name device"  # which model a file defines, and where it runs
RANKS = "nproc launcher_args rank"  # a distributed job (--nproc), or one rank of a report or log directory
LOGS = "strict jobs debug"  # reading saved reports and TORCH_TRACE logs, and --debug


def capture_options(names: str, **options: tuple[Any, Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add the shared capture options ``names`` (space-separated, in their --help order) to a command, where
    its ``capture: Capture`` parameter stands; the command receives them as one ``Capture``.

    A name that is one of the command's own parameters moves that parameter to its place in the order;
    ``options`` gives a command its own (option, default) for a shared name (e.g. another --backend default).
    """
    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        own = inspect.signature(func, eval_str=True).parameters
        order = names.split()
        shared = [n for n in order if n not in own]
        unknown = [n for n in shared if n not in CAPTURE_OPTIONS]
        assert not unknown, f"{func.__name__}: no capture option {unknown}"
        table = {**CAPTURE_OPTIONS, **options}
        block = [own[n] if n in own else inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=table[n][1],
                                                             annotation=table[n][0]) for n in order]
        listed = list(own)
        at = listed.index("capture")
        before = [own[n] for n in listed[:at] if n not in order]
        after = [own[n] for n in listed[at + 1:] if n not in order]
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in (*before, *block, *after)]

        @functools.wraps(func)
        def command(**kwargs: Any) -> None:
            values = {n: d for n, (_, d) in table.items()}
            values.update({n: kwargs.pop(n) for n in shared})
            func(capture=Capture(values), **kwargs)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return decorate


def deprecated(command: str, old: str, new: str, given: bool) -> bool:
    """``given``; when the old spelling of a renamed option was used, one warning line on stderr says the new one.
    The old spellings are hidden from --help and go in the next release (docs/index.md, "Renamed options")."""
    if given:
        note(f"warning: `{command} {old}` is deprecated and will be removed in the next release; use {new}")
    return given


def _nearest(word: str, allowed: Sequence[str]) -> str:
    """The allowed word the user most likely meant (yml -> yaml); the first one when none is close."""
    import difflib

    aliases = {"yml": "yaml", "txt": "table", "text": "table", "htm": "html"}
    if aliases.get(word) in allowed:
        return aliases[word]
    close = difflib.get_close_matches(word, allowed, n=1, cutoff=0.5)
    return close[0] if close else allowed[0]


@dataclass
class Served:
    """Commands run for tcinspect's MCP server (tcinspect.mcp_server) rather than a terminal: each document a
    command would print is kept here (its ``--format json`` text), so are its notes, what it is doing goes to
    ``status``, and every capture compiles in a child process, quietly, whatever --debug or $TCINSPECT_IN_PROCESS
    say (the server's stdout is the protocol)."""

    status: Callable[[str], None]
    documents: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_SERVED: contextvars.ContextVar[Optional[Served]] = contextvars.ContextVar("tcinspect_served", default=None)


@contextlib.contextmanager
def served(status: Callable[[str], None]) -> Iterator[Served]:
    """Run commands for the MCP server while this lasts (``Served``)."""
    run = Served(status)
    token = _SERVED.set(run)
    try:
        yield run
    finally:
        _SERVED.reset(token)


@contextlib.contextmanager
def progress(label: str) -> Iterator[None]:
    """A spinner on stderr while compiling, only on a terminal; user prints go to stderr too."""
    run = _SERVED.get()
    if run is not None:
        run.status(label)
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        if err_console.is_terminal:
            with err_console.status(label, spinner="dots"):
                yield
        else:
            yield


def note(text: str) -> None:
    """A diagnostic line on stderr (never on stdout, which carries data)."""
    run = _SERVED.get()
    if text and run is not None:
        run.notes.append(text)
    elif text:
        sys.stderr.write(f"tcinspect: {text}\n")


def obtain(request: Request, debug: bool = False) -> Report:
    """The command's report (tcinspect.request.obtain), with a spinner while it compiles and a note of where
    it came from. A failed run is a report too: show it, then ``exit_for`` it.

    A model file compiles in a child process (a native crash is then a report, exit 4) unless --debug
    or $TCINSPECT_IN_PROCESS asks for tcinspect's own process; --debug also shows torch's own log output.
    """
    from tcinspect import interrupts
    from tcinspect.request import is_report_path, is_torch_trace, obtained

    for_server = _SERVED.get() is not None
    request = replace(request, quiet=for_server or not debug,
                      isolate=for_server or (not debug and not in_process_asked()))
    file, nproc = request.file, request.nproc
    label = f"compiling {file} …" if file and not is_report_path(file) else "reading report …"
    if file and not is_report_path(file) and is_torch_trace(file):
        label = f"reading TORCH_TRACE {file} …"
    if nproc is not None and file and not is_report_path(file):
        label = f"compiling {file} on {nproc} ranks (torchrun) …"
    with progress(label):
        got = obtained(request)
    interrupts.check()  # torch may have swallowed the KeyboardInterrupt: nothing is shown then
    if got.report.failure is None:
        note(got.note)
        if got.warning:
            note(f"warning: {got.warning}")
    return got.report


def exit_for(rep: Report, check_failed: bool = False) -> None:
    """End the command with the report's failure, if it has one: its one line and its kind's exit code; else, where
    the command's own check failed (``check_failed``), with exit 1."""
    if rep.failure is not None:
        raise ReportFailedError(rep.failure.kind, rep.failure.cause, rep.failure.fix)
    if check_failed:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def require(rep: Report, present: object, what: str, fix: str) -> Report:
    """``rep`` where it has the section the command shows (``present`` is truthy); else the one bad-input line."""
    if not present:
        raise UsageError(f"this report has no {what}", fix)
    return rep


def emit_document(data: Any, fmt: str, output: Optional[Path], table: Callable[[], RenderableType]) -> None:
    """Like ``emit`` for a command's own document (e.g. the breaks list) rather than the whole report."""
    from tcinspect import serialize

    _emit(lambda f: serialize.dump_data(data, f), fmt, output, table)


def emit(report: Report, fmt: str, output: Optional[Path], table: Callable[[], RenderableType],
         timings: bool = True, pages: Optional[Mapping[str, Callable[[], str]]] = None) -> None:
    """Write the report where the user asked: a file (atomically), YAML/JSON on stdout, or tables.

    ``pages`` adds whole-report formats rendered to text (e.g. ``html``), chosen by --format or by
    the output file's suffix.
    """
    from tcinspect import serialize

    def text(f: str) -> str:
        out = serialize.dumps(report, f, timings=timings)
        if f == "yaml" and output is not None:  # a JSON twin, so that reading it back is fast (cache.read_report)
            from tcinspect import cache

            cache.remember_twin(out, report, timings=timings)
        return out

    _emit(text, fmt, output, table, pages or {})


def _emit(text: Callable[[str], str], fmt: str, output: Optional[Path], table: Callable[[], RenderableType],
          pages: Mapping[str, Callable[[], str]] = {}) -> None:
    from tcinspect import interrupts, outfile, serialize

    interrupts.check()
    run = _SERVED.get()
    if run is not None:
        run.documents.append(text("json"))
        return
    if output is not None:
        suffix = output.suffix.lower().lstrip(".")
        file_fmt = fmt if fmt in serialize.FORMATS or fmt in pages else \
            suffix if suffix in pages else serialize.format_for_path(output)
        content = pages[file_fmt]() if file_fmt in pages else text(file_fmt)
        how = outfile.write(output, content)
        if how == "stdout":
            return
        note(f"wrote {output} ({file_fmt})")
        if fmt != "table":
            return
    if fmt in pages:
        sys.stdout.write(pages[fmt]())
        return
    if fmt in serialize.FORMATS:
        sys.stdout.write(text(fmt))
        return
    from tcinspect.render.table import console

    out = console()
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out = console(width=120)  # pipes and files: not 80 columns
    out.print(table())
