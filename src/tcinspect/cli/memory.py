"""`tcinspect memory`: what the compiled graph keeps for backward, by module and line, and its measured peak."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, yaml, json or html (the whole report's page, "
                                                               "with a bar per module).",
                                        callback=c.choice("--format", ("table", "yaml", "json", "html")))]


@app.command("memory", epilog="Example: tcinspect memory sample_models/transformer_block.py --backend aot_eager")
@c.capture_options(f"{c.MODEL_FILE} backend mode dynamic fresh timeout rank strict debug")
def memory(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Show every saved tensor (default: the 15 largest of "
                                                         "each graph).")] = False,
    fmt: FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """Bytes each forward graph saves for backward (parameters, inputs, activations), per tensor, module and line; Inductor's peak estimates; on a CUDA device, one training step's peak compiled vs eager."""
    from tcinspect.report import Options

    # the step peaks are measured (more training steps, on a CUDA device) only when this view asks; a report
    # captured without them answers where they could not have been measured (a CPU run: request._unmeasured)
    rep = capture.obtain(file, script_args, also_accept=(Options.of(capture.compile()),), measure_memory=True)
    from tcinspect.analysis import memory as views
    from tcinspect.render import memory as render

    if fmt == "html" or (output is not None and output.suffix.lower() == ".html" and fmt == "table"):
        from tcinspect.render import html

        c.emit(rep, "html", output, lambda: render.table(rep), pages={"html": lambda: html.render(rep)})
    else:
        c.emit_document(views.document(rep), fmt, output, lambda: render.table(rep, None if all_rows else 15))
    c.exit_for(rep)
