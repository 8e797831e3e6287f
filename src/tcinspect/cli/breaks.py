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
    "--fullgraph", help="Also say whether the model compiles with fullgraph=True (exit 1 if it does not).")]


@app.command(epilog="Example: tcinspect breaks sample_models/graph_breaks.py")
def breaks(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    fullgraph: FullgraphCheck = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = None,
    script: c.ScriptOpt = False,
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    backend: Annotated[str, typer.Option("--backend", help="Backend for a new capture (Dynamo only by default).")] = "eager",
    dynamic: c.DynamicOpt = "",
    no_backward: c.NoBackwardOpt = False,
    fresh: c.FreshOpt = False,
    timeout: c.TimeoutOpt = None,
    nproc: c.NprocOpt = None,
    torchrun_arg: c.TorchrunArgOpt = None,
    rank: c.RankOpt = None,
    strict: c.StrictOpt = False,
    jobs: c.JobsOpt = None,
    debug: c.DebugOpt = False,
) -> None:
    """List each distinct graph break: your file:line, PyTorch's reason and hints, and a suggested fix."""
    fmt = c.check_format(fmt)
    opts = c.options(backend, "", False, dynamic, no_backward, device)
    # a full Inductor trace of the same file answers too: its Dynamo stage is the same
    rep = c.obtain(file, opts, model=model, inputs=inputs, fresh=fresh, script_args=script_args, debug=debug,
                   also_accept=[Options.of(replace(opts, backend="inductor"))], rank=rank, strict=strict, jobs=jobs,
                   timeout=timeout, nproc=nproc, launcher_args=torchrun_arg, script=script)
    c.emit_document(divergence.document(rep, lambda x: breaks_document(x, fullgraph)), fmt, output,
                    lambda: ranks.per_rank(rep, lambda x: render.breaks(x, fullgraph), divergence.breaks_key))
    c.exit_for(rep)
    if fullgraph and not all(fullgraph_ok(x) for _, x in divergence.per_rank(rep)):
        raise typer.Exit(int(ExitCode.CHECK_FAILED))
