"""`tcinspect guards`: what each graph assumed, and why it recompiled."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import Options


@app.command(epilog="Example: tcinspect guards sample_models/recompile_scalar.py --dynamic true --per-call 5")
@c.capture_options("model_name script inputs_name device backend dynamic no_backward fresh timeout nproc launcher_args rank "
                   "strict jobs debug", backend=(c.DynamoBackendOpt, "eager"), dynamic=(c.ShortDynamicOpt, ""))
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
    """Guards per graph by kind (shape, dtype, device, value, ...), then each recompile: which input set, which guard failed, what to do."""
    from dataclasses import replace

    from tcinspect.analysis import divergence
    from tcinspect.analysis.guards import guards_document
    from tcinspect.render import guards as render
    from tcinspect.render import ranks

    opts = capture.compile()
    rep = capture.obtain(file, script_args, compile=opts, per_call=per_call,
                         also_accept=(replace(Options.of(replace(opts, backend="inductor")), per_call=per_call),))
    c.emit_document(divergence.document(rep, guards_document), fmt, output,
                    lambda: ranks.per_rank(rep, lambda x: render.guards(x, all_kinds), divergence.guards_key))
    c.exit_for(rep)
