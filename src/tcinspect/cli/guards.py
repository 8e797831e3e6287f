"""`tcinspect guards`: why it recompiled and what to do, then what each graph assumed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import Options, Report

if TYPE_CHECKING:
    from rich.console import RenderableType


@app.command(epilog="Example: tcinspect guards sample_models/recompile_scalar.py --dynamic true --per-call 5")
@c.capture_options(f"{c.MODEL_FILE} backend dynamic no_backward fresh timeout {c.RANKS} {c.LOGS}",
                   backend=(c.DynamoBackendOpt, "eager"), dynamic=(c.ShortDynamicOpt, ""))
def guards(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    all_kinds: Annotated[bool, typer.Option("--all", help="Also list type, identity and bookkeeping guards, and every row of long tables.")] = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
    per_call: Annotated[int, typer.Option(
        "--per-call", help="After compiling, time N calls per input set under torch.profiler: Dynamo's cache "
                           "lookup per call and the share of the call before its first op (0: none).",
        min=0, max=1000, metavar="N")] = 0,
) -> None:
    """Each recompile first (which input set, which guard failed, what to do), then the guards per graph by kind (shape, dtype, device, value, ...)."""
    from dataclasses import replace

    from tcinspect.analysis import divergence, findings
    from tcinspect.analysis.guards import guards_document

    opts = capture.compile()
    rep = capture.obtain(file, script_args, compile=opts, per_call=per_call,
                         also_accept=(replace(Options.of(replace(opts, backend="inductor")), per_call=per_call),))
    c.emit_document(divergence.document(rep, lambda x: {**guards_document(x), "findings": findings.document(x)}),
                    fmt, output, lambda: _table(rep, all_kinds))
    c.exit_for(rep)


def _table(rep: Report, all_kinds: bool) -> RenderableType:
    """Each recompile and its fix, then the guards; a distributed report's findings lead its ranks' overview."""
    from rich.console import Group
    from rich.text import Text

    from tcinspect.analysis import divergence
    from tcinspect.render import findings, ranks
    from tcinspect.render import guards as render

    view = ranks.per_rank(rep, lambda x: render.guards(x, all_kinds), divergence.guards_key)
    return Group(findings.block(rep), Text(""), view) if rep.ranks else view
