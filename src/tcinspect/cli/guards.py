"""`tcinspect guards`: what each graph assumed, and why it recompiled."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import Options


@app.command(epilog="Example: tcinspect guards sample_models/recompile_scalar.py --dynamic true --per-call 5")
def guards(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    all_kinds: Annotated[bool, typer.Option("--all", help="Also list type, identity and bookkeeping guards, and every row of long tables.")] = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = None,
    script: c.ScriptOpt = False,
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    backend: Annotated[str, typer.Option("--backend", help="Backend for a new capture (Dynamo only by default).")] = "eager",
    dynamic: Annotated[str, typer.Option("--dynamic", help="true, false or auto (torch's default).")] = "",
    no_backward: c.NoBackwardOpt = False,
    fresh: c.FreshOpt = False,
    timeout: c.TimeoutOpt = None,
    nproc: c.NprocOpt = None,
    torchrun_arg: c.TorchrunArgOpt = None,
    rank: c.RankOpt = None,
    strict: c.StrictOpt = False,
    jobs: c.JobsOpt = None,
    debug: c.DebugOpt = False,
    per_call: Annotated[int, typer.Option(
        "--per-call", help="After compiling, time N calls per input set under torch.profiler: Dynamo's cache "
                           "lookup per call and the share of the call before its first op (0: none).",
        min=0, max=1000, metavar="N")] = 0,
) -> None:
    """Guards per graph by kind (shape, dtype, device, value, ...), then each recompile: which input set, which guard failed, what to do."""
    from dataclasses import replace

    from tcinspect.analysis import divergence
    from tcinspect.analysis.guards import guards_document
    from tcinspect.render import guards as render
    from tcinspect.render import ranks

    fmt = c.check_format(fmt)
    opts = c.options(backend, "", False, dynamic, no_backward, device)
    rep = c.obtain(file, opts, model=model, inputs=inputs, fresh=fresh, script_args=script_args, debug=debug,
                   also_accept=[replace(Options.of(replace(opts, backend="inductor")), per_call=per_call)], rank=rank, strict=strict,
                   timeout=timeout, nproc=nproc, launcher_args=torchrun_arg, script=script, per_call=per_call, jobs=jobs)
    c.emit_document(divergence.document(rep, guards_document), fmt, output,
                    lambda: ranks.per_rank(rep, lambda x: render.guards(x, all_kinds), divergence.guards_key))
    c.exit_for(rep)
