"""`tcinspect breaks`: every distinct graph break, where it is, and how to fix it."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from tcinspect.analysis import divergence
from tcinspect.analysis.breaks import breaks_document, fullgraph_ok
from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import ExitCode
from tcinspect.render import breaks as render
from tcinspect.render import ranks
from tcinspect.report import Options

FullgraphCheck = Annotated[bool, typer.Option(
    "--check-fullgraph", help="Also say whether the model compiles with fullgraph=True (exit 1 if it does not).")]
#: the spelling before --check-fullgraph (--fullgraph passes fullgraph=True to torch.compile elsewhere)
OldFullgraphCheck = Annotated[bool, typer.Option("--fullgraph", hidden=True)]


@app.command(epilog="Example: tcinspect breaks sample_models/graph_breaks.py")
@c.capture_options("model_name script inputs_name device backend dynamic no_backward fresh timeout nproc launcher_args rank "
                   "strict jobs debug", backend=(c.DynamoBackendOpt, "eager"))
def breaks(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    check_fullgraph: FullgraphCheck = False,
    old_fullgraph: OldFullgraphCheck = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """List each distinct graph break: your file:line, PyTorch's reason and hints, and a suggested fix."""
    fullgraph = check_fullgraph or c.deprecated("breaks", "--fullgraph", "--check-fullgraph", old_fullgraph)
    opts = capture.compile()
    # a full Inductor trace of the same file answers too: its Dynamo stage is the same
    rep = capture.obtain(file, script_args, compile=opts, also_accept=(Options.of(replace(opts, backend="inductor")),))
    c.emit_document(divergence.document(rep, lambda x: breaks_document(x, fullgraph)), fmt, output,
                    lambda: ranks.per_rank(rep, lambda x: render.breaks(x, fullgraph), divergence.breaks_key))
    c.exit_for(rep)
    if fullgraph and not all(fullgraph_ok(x) for _, x in divergence.per_rank(rep)):
        raise typer.Exit(int(ExitCode.CHECK_FAILED))
