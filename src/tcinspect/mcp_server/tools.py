"""The MCP server's tools: one per question tcinspect answers, each a CLI command run for the server.

A tool takes its command's options, named as the flags are (``--max-graph-breaks`` is ``max_graph_breaks``, the
FILE argument ``file``), and answers with the document the command prints with ``--format json``: the command
itself runs (``tcinspect.cli.common.served``), so its checks, its one-line errors and its data are the CLI's, and
a capture runs in a child process as the CLI's does. A tool built on ``trace`` answers with part of the report
(``Tool.keys``). Not offered: options that write files (``--output``, ``--save``, ``--perfetto``, ``--junit``,
``--update``), that only shape the terminal's tables, or that compile in the server's own process (``--debug``,
``shapes --verify-spec``). No SDK import here: ``server`` speaks the protocol.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from tcinspect.errors import TcinspectError, UsageError

#: Options no tool takes: where the output goes, and --debug (which compiles in the server's own process).
WITHHELD = ("--format", "--output", "--debug")
#: What only shapes trace's terminal view (or draws SVG).
TABLE_ONLY = ("--stage", "--code", "--all", "--graph")

#: The report's keys every trace-based tool answers with: what ran, how it ended, the counts.
HEADER_KEYS = ("schema_version", "tcinspect_version", "torch_version", "device", "target", "options", "status",
               "error", "failure", "calls", "input_errors", "summary", "parse", "timings")
#: The keys of a rank the ``ranks`` tool keeps (its stages are ``trace``'s, with ``rank``).
RANK_KEYS = ("rank", "status", "error", "where", "device", "calls", "input_errors", "summary", "log", "origin")


@dataclass(frozen=True)
class Tool:
    """One question: the command that answers it, and what of its document the tool returns."""

    name: str
    command: str
    description: str
    #: the command's options the tool does not take, besides WITHHELD and hidden ones
    withheld: tuple[str, ...] = ()
    #: a tool built on a command that prints the whole report: the keys it answers with besides HEADER_KEYS
    #: (None: the command's whole document)
    keys: Optional[tuple[str, ...]] = None
    #: the tool's own options (a JSON Schema each), beside its command's
    own: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_SECTIONS = {"type": "array", "items": {"type": "string"},
             "description": "More of the report than its header and summary: any of its top-level keys (stages, "
                            "compiles, compile_time, guard_cost, memory, coverage, cudagraphs, shapes, regions, ranks, "
                            "divergence, passes, verification, exports, bench, ...), or all."}
_ALSO = "The answer is the document `tcinspect {command} --format json` prints for the same options."

TOOLS: tuple[Tool, ...] = (
    Tool("trace", "trace",
         "Compile a model file once (a .py with `model` and `example_inputs`, or a script), or read a saved report "
         "or a TORCH_TRACE log, and summarize every stage: graphs, graph breaks, recompiles, guards, AOT graphs, "
         "kernels, compile time, cache hits, how much ran compiled. Answers with the report's header and summary; "
         "`sections` adds any other part of the report (`tcinspect trace --format json` is all of it). Start here: a "
         "capture is cached, so the other tools, asked with the same options, read it instead of compiling again.",
         withheld=TABLE_ONLY, keys=(), own={"sections": _SECTIONS}),
    Tool("breaks", "breaks",
         "Each distinct graph break: its gb_id, your file:line and code, PyTorch's reason and hints, a suggested "
         "fix, what it costs, and the compile_ids it broke (the ids `guards`, `compile_time` and `codegen` use). "
         "check_fullgraph says whether fullgraph=True would compile; try_fixes re-runs a model file once per "
         "torch._dynamo.config fix the breaks suggest, each a fresh capture checked against eager. " + _ALSO),
    Tool("guards", "guards",
         "What each compiled graph assumed and why it recompiled: guards per compile_id by kind (shape, dtype, "
         "value, ...), each recompile with the input set and the guard that failed and what to do, and the findings "
         "that need action; per_call times N calls per input set (Dynamo's cache look-up per call). " + _ALSO,
         withheld=("--all",)),
    Tool("shapes", "shapes",
         "Dynamic shapes: the symbols torch made (source, hint, range), the sizes your code made constant (value, "
         "torch's reason, your line), shape guards with their lines, unbacked symbols, data-dependent errors, and a "
         "suggested mark_dynamic spec. " + _ALSO, withheld=("--verify-spec",)),
    Tool("codegen", "codegen",
         "Inductor's kernels in launch order, per compile_id: name, kind, fused ops, your source lines and modules, "
         "sizes. kernel=NAME (exact, substring or glob) gives one kernel's code and metadata; line=FILE:LINE or "
         "module=PATH the kernels one line or module became; wrapper the generated wrapper code; bench times every "
         "kernel on a CUDA GPU (roofline, eager vs compiled). Needs the inductor backend (the default). " + _ALSO,
         withheld=("--save", "--all")),
    Tool("compile_time", "compile-time",
         "Where compile time went: the slowest compiles and phases (Dynamo, AOTAutograd, Inductor, kernel compile, "
         "autotuning), forward and backward, each compile cache look-up (FX graph, AOTAutograd: hit, miss, bypass "
         "with torch's reason and the key components that changed), and what to do. fresh=true compiles cold. "
         + _ALSO, withheld=("--perfetto", "--tree")),
    Tool("memory", "memory",
         "Bytes each forward graph saves for backward (parameters, inputs, activations), per tensor, module and "
         "line; Inductor's peak estimates; on a CUDA device one training step's peak compiled vs eager. " + _ALSO,
         withheld=("--all",)),
    Tool("cudagraphs", "trace",
         "CUDA graphs under mode='reduce-overhead' (on a CUDA device): each compiled graph recorded, skipped (torch's "
         "reason and your line) or not recorded, with its recordings and re-recordings. Answers with the report's "
         "header, summary and its `cudagraphs` section (absent: CUDA graphs were off).",
         withheld=TABLE_ONLY, keys=("cudagraphs",)),
    Tool("ranks", "trace",
         "A distributed job: every rank's status and counts, and where the ranks diverge (graph breaks, recompiles, "
         "guards, collectives, kernels, by compile_id). Give a TORCH_TRACE directory of rank logs, a saved "
         "distributed report, or a model file with nproc=N (run under torchrun); rank=N reads one rank alone. "
         "Answers with the report's header, `ranks` (each rank's summary) and `divergence`.",
         withheld=TABLE_ONLY, keys=("ranks", "divergence", "mixed_runs", "graph_execution_order")),
    Tool("check", "check",
         "Check model files or saved reports against budgets (max_graph_breaks, max_recompiles, max_kernels, "
         "max_compile_time, min_coverage, ...) and a baseline snapshot (baseline=FILE, read only), as CI does: each "
         "finding with pass or fail and the numbers. A failed budget is an answer, not a tool error. " + _ALSO,
         withheld=("--junit", "--update")),
    Tool("diff", "diff",
         "Compare two saved reports or TORCH_TRACE logs (a, b): counts, graphs, graph breaks, recompiles and "
         "kernels added or removed. " + _ALSO),
    Tool("coverage", "trace",
         "How much of the model runs compiled, in PyTorch CI's figures: calls_captured, unique_graphs, "
         "fallbacks_to_eager, each compile's calls captured or the frame torch ran eagerly (its reason and your "
         "line), and for a model file one measured call's ATen ops compiled vs eager by line. Answers with the "
         "report's header, summary and its `coverage` section.", withheld=TABLE_ONLY, keys=("coverage",)),
    Tool("verify", "verify",
         "Run a model file eagerly and compiled on the same inputs and compare every output and gradient (your "
         "backend and passes included); on a mismatch, where results first depart (graph, node, your line; or the "
         "compiler stage and torch's CompilerBisector's subsystem). Answers with the report's header, summary and "
         "its `verification` section (and `passes`).", keys=("verification", "passes")),
    Tool("export", "export",
         "torch.export the model in strict and non-strict mode (optionally through AOTInductor): per mode the graph "
         "and signature, or the failure. Answers with the report's header, summary and its `exports` section.",
         withheld=("--graphs",), keys=("exports",)),
)

BY_NAME = {t.name: t for t in TOOLS}


@dataclass(frozen=True)
class Param:
    """One argument a tool takes: its name, the CLI's spelling of it, and its JSON Schema."""

    name: str
    flag: str  # --max-graph-breaks, or the argument's own name (file)
    schema: Mapping[str, Any]
    positional: bool = False
    switch: bool = False  # a flag without a value
    off: str = ""  # the switch's other spelling (--no-graphs)
    many: bool = False
    required: bool = False


@dataclass(frozen=True)
class Answer:
    """What a tool call came to: its data (the command's document, or the part of it the tool returns), the one
    line of an error (cause — fix), the command's notes, and the exit code the command ended with."""

    data: Optional[dict[str, Any]]
    error: str = ""
    notes: tuple[str, ...] = ()
    exit_code: int = 0


class Served(Protocol):
    """A command's run for the server (tcinspect.cli.common.Served): the documents it printed, its notes."""

    documents: list[str]
    notes: list[str]


class Toolbox:
    """The tools over the CLI's commands, which ``tcinspect mcp`` hands in (the server imports no command): the
    commands as click runs them, by name, and ``served`` (tcinspect.cli.common.served), under which a command runs
    for the server rather than a terminal."""

    def __init__(self, commands: Mapping[str, Any],
                 served: Callable[[Callable[[str], None]], AbstractContextManager[Served]]) -> None:
        self.commands = commands
        self.served = served
        self.params = {t.name: self._params(t) for t in TOOLS}

    def _params(self, tool: Tool) -> dict[str, Param]:
        """What ``tool`` takes, in its command's order: the command's arguments and options less those withheld,
        then the tool's own."""
        command = self.commands[tool.command]
        hints = inspect.signature(command.callback, eval_str=True).parameters
        out: dict[str, Param] = {}
        for p in command.params:
            positional = p.param_type_name == "argument"
            if p.hidden or any(o in (*WITHHELD, *tool.withheld) for o in p.opts):
                continue
            flag = p.name if positional else next(o for o in p.opts if o.startswith("--"))
            schema: dict[str, Any] = _schema(hints[p.name].annotation)
            if p.help:
                schema["description"] = " ".join(p.help.split())
            switch = bool(getattr(p, "is_flag", False))
            if p.default not in (None, "", ()) and not callable(p.default) and (not switch or p.default is True):
                schema["default"] = p.default  # a switch is off unless it says otherwise
            key = flag.lstrip("-").replace("-", "_")
            out[key] = Param(key, flag, schema, positional, switch, next(iter(p.secondary_opts), ""),
                             schema["type"] == "array", bool(p.required))
        for key, own in tool.own.items():
            out[key] = Param(key, "", dict(own))
        return out

    def input_schema(self, name: str) -> dict[str, Any]:
        """The JSON Schema of tool ``name``'s arguments."""
        taken = self.params[name]
        schema: dict[str, Any] = {"type": "object", "properties": {k: dict(p.schema) for k, p in taken.items()},
                                  "additionalProperties": False}
        required = [k for k, p in taken.items() if p.required]
        if required:
            schema["required"] = required
        return schema

    def argv(self, name: str, arguments: Mapping[str, Any]) -> list[str]:
        """The command line tool ``name``'s arguments stand for (their values are the command's to check)."""
        taken = self.params[name]
        unknown = sorted(set(arguments) - set(taken))
        if unknown:
            raise UsageError(f"{name} takes no argument {unknown[0]!r}", f"its arguments: {', '.join(taken)}")
        options: list[str] = []
        positional: list[str] = []
        for key, p in taken.items():
            value = arguments.get(key)
            if value is None or not p.flag:
                continue
            if p.many != isinstance(value, list):
                raise UsageError(f"{key}={json.dumps(value)} is {'not ' if p.many else ''}a list",
                                 f"give {key} {'a list of values' if p.many else 'one value'}")
            if p.switch:
                if not isinstance(value, bool):
                    raise UsageError(f"{key}={json.dumps(value)} is not true or false", f"give {key} true or false")
                options += [p.flag] if value else [p.off] if p.off else []
            elif p.positional:
                positional += [_word(v) for v in value] if p.many else [_word(value)]
            else:
                options += [f"{p.flag}={_word(v)}" for v in (value if p.many else [value])]
        if "script_args" in arguments and "file" not in arguments:
            raise UsageError("script_args are the arguments of a script", "give the script as file too")
        return [*options, "--", *positional]

    def answer(self, name: str, arguments: Mapping[str, Any], status: Callable[[str], None] = lambda _: None) -> Answer:
        """Run tool ``name``'s command for the server and take its document; a bad input or a failed run is an
        Answer with its one line. Only a bug in tcinspect raises."""
        import typer

        tool = BY_NAME[name]
        command = self.commands[tool.command]
        try:
            args = self.argv(name, arguments)
        except UsageError as exc:
            return Answer(None, exc.one_line(), exit_code=int(exc.exit_code))
        if any(o == "--format" for p in command.params for o in p.opts):
            args.insert(0, "--format=json")
        code, error = 0, ""
        with self.served(status) as run:
            try:
                with command.make_context(tool.command, args) as ctx:
                    command.invoke(ctx)
            except TcinspectError as exc:
                code, error = int(exc.exit_code), exc.one_line()
            except typer.Exit as exc:  # the command's verdict after its document (check, breaks --check-fullgraph)
                code = int(exc.exit_code)
            except _click_error() as exc:
                code = int(getattr(exc, "exit_code", 2))
                error = f"{exc.format_message()} — see `tcinspect {tool.command} --help`"  # type: ignore[attr-defined]
        notes = list(run.notes)
        data = json.loads(run.documents[-1]) if run.documents else None
        if data is not None and tool.keys is not None:
            data = _picked(tool, data, arguments.get("sections") or (), notes)
        return Answer(data, error, tuple(notes), code)


def _schema(annotation: Any) -> dict[str, Any]:
    """A JSON Schema for one command parameter's annotation (``Annotated[Optional[int], typer.Option(min=1)]``)."""
    base, info = annotation, None
    if typing.get_origin(base) is typing.Annotated:
        base, info = typing.get_args(base)[0], typing.get_args(base)[1]
    if typing.get_origin(base) is typing.Union:
        base = next(a for a in typing.get_args(base) if a is not type(None))
    many = typing.get_origin(base) in (list, tuple)
    item = typing.get_args(base)[0] if many else base
    kind = {bool: "boolean", int: "integer", float: "number"}.get(item, "string")
    one: dict[str, Any] = {"type": kind}
    for bound, key in (("min", "minimum"), ("max", "maximum")):
        value = getattr(info, bound, None)
        if value is not None:
            one[key] = value
    return {"type": "array", "items": one} if many else one


def _word(value: Any) -> str:
    if isinstance(value, (dict, list)):
        raise UsageError(f"{json.dumps(value)} is not one value", "give a string or a number")
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _click_error() -> type[Exception]:
    """click's ClickException, wherever this typer takes click from (vendored as typer._click, or click itself)."""
    import typer

    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _picked(tool: Tool, doc: dict[str, Any], sections: Any, notes: list[str]) -> dict[str, Any]:
    """The keys of the report a trace-based tool answers with; a note names the rest."""
    wanted = {*HEADER_KEYS, *(tool.keys or ()), *(sections if isinstance(sections, list) else [sections])}
    if "all" in wanted:
        return doc
    out = {k: v for k, v in doc.items() if k in wanted}
    if "ranks" in out and "ranks" in (tool.keys or ()):
        out["ranks"] = [{k: r[k] for k in RANK_KEYS if k in r} for r in out["ranks"]]
    missing = [k for k in (tool.keys or ()) if k not in doc]
    if missing and tool.name != "ranks":
        notes.append(f"this report has no {', '.join(missing)} section")
    elif "ranks" not in doc and tool.name == "ranks":
        notes.append("this report is not a distributed run's: no ranks (give a TORCH_TRACE directory of rank logs, "
                      "a saved distributed report, or nproc=N)")
    left = [k for k in doc if k not in out]
    if left:
        notes.append(f"left out of this answer: {', '.join(left)} (the trace tool's sections=[...] gives them)")
    return out

