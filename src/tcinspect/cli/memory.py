"""`tcinspect memory`: what the compiled graph keeps for backward, by module and line, and its measured peak."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, yaml, json or html (the whole report's page, "
                                                               "with a bar per module).")]


@app.command("memory", epilog="Example: tcinspect memory sample_models/transformer_block.py --backend aot_eager")
def memory(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Show every saved tensor (default: the 15 largest of "
                                                         "each graph).")] = False,
    fmt: FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = None,
    script: c.ScriptOpt = False,
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    backend: c.BackendOpt = "inductor",
    mode: c.ModeOpt = "",
    dynamic: c.DynamicOpt = "",
    fresh: c.FreshOpt = False,
    timeout: c.TimeoutOpt = None,
    rank: c.RankOpt = None,
    strict: c.StrictOpt = False,
    debug: c.DebugOpt = False,
) -> None:
    """Bytes each forward graph saves for backward (parameters, inputs, activations), per tensor, module and line; Inductor's peak estimates; on a CUDA device, one training step's peak compiled vs eager."""
    fmt = c.check_format(fmt, ("table", "yaml", "json", "html"))
    opts = c.options(backend, mode, False, dynamic, False, device)
    from tcinspect.report import Options

    # the step peaks are measured (more training steps, on a CUDA device) only when this view asks; a report
    # captured without them answers where they could not have been measured (a CPU run: request._unmeasured)
    rep = c.obtain(file, opts, model=model, inputs=inputs, fresh=fresh, script_args=script_args, debug=debug,
                   rank=rank, strict=strict, timeout=timeout, script=script, also_accept=[Options.of(opts)],
                   measure_memory=True)
    from tcinspect.analysis import memory as views
    from tcinspect.render import memory as render

    if fmt == "html" or (output is not None and output.suffix.lower() == ".html" and fmt == "table"):
        from tcinspect.render import html

        c.emit(rep, "html", output, lambda: render.table(rep), pages={"html": lambda: html.render(rep)})
    else:
        c.emit_document(views.document(rep), fmt, output, lambda: render.table(rep, None if all_rows else 15))
    c.exit_for(rep)
