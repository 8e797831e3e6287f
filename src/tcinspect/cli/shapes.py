"""`tcinspect shapes`: which dims are dynamic, which the code made constant (line and reason), and a spec."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import Options

if TYPE_CHECKING:
    from tcinspect.capturing.specverify import SpecCheck


@app.command(epilog="Example: tcinspect shapes sample_models/shapes_loop.py --verify-spec")
@c.capture_options(f"{c.MODEL_FILE} backend dynamic no_backward fresh timeout strict debug",
                   backend=(c.DynamoBackendOpt, "eager"), dynamic=(c.ShortDynamicOpt, ""))
def shapes(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    verify_spec: Annotated[bool, typer.Option("--verify-spec", help="Compile the model file's calls again with the suggested spec (a counting backend) and show how many compiles it takes.")] = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """Dynamic shapes: symbols torch made (source, hint, range), which became constants (value, torch's reason, your line), shape guards with their lines, unbacked symbols, data-dependent errors, and a suggested mark_dynamic spec."""
    from dataclasses import replace

    from tcinspect.render import shapes as render

    if verify_spec and (not file or not file.endswith(".py")):
        from tcinspect.errors import UsageError

        raise UsageError("--verify-spec needs a model file (it compiles the file's calls again)",
                         "give the model file, not a saved report or a log")
    opts = capture.compile()
    rep = capture.obtain(file, script_args, compile=opts, also_accept=(Options.of(replace(opts, backend="inductor")),))
    backend, model, inputs = capture.backend, capture.model_name, capture.inputs_name
    check: Optional[SpecCheck] = None
    if verify_spec:
        from tcinspect.analysis.shapes import spec_marks
        from tcinspect.capturing.specverify import verify_suggested

        check = verify_suggested(rep, spec_marks(rep), backend, model or "model", inputs)
    c.emit_document(render.document(rep, check), fmt, output, lambda: render.with_check(rep, check))
    c.exit_for(rep)
