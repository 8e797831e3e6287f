"""`tcinspect export`: torch.export in strict and non-strict mode, optionally through AOTInductor."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import ExitCode, UsageError
from tcinspect.report import ExportRequest, Report


@app.command("export", epilog="Example: tcinspect export sample_models/silu_export_matrix.py --dynamic-dim 0")
def export_(
    file: c.FileArg = None,
    strict: Annotated[bool, typer.Option("--strict", help="Run strict (TorchDynamo) export.")] = False,
    non_strict: Annotated[bool, typer.Option("--non-strict", help="Run non-strict (Python tracing) export.")] = False,
    dynamic_dim: Annotated[Optional[list[int]], typer.Option(
        "--dynamic-dim", help="Mark this dimension of every tensor input dynamic (Dim); repeatable. 0: batch.",
        show_default=False, min=0)] = None,
    aoti: Annotated[bool, typer.Option("--aoti", help="Also compile and package with AOTInductor and check the "
                                                      "packaged model against eager.")] = False,
    graphs: Annotated[bool, typer.Option("--graphs/--no-graphs", help="Show each exported graph and signature.")] = True,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = None,
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    fresh: c.FreshOpt = False,
    timeout: c.TimeoutOpt = None,
    debug: c.DebugOpt = False,
) -> None:
    """Export the model with torch.export (strict and non-strict by default): per mode the graph, signature or failure (exit 1 if one failed)."""
    from tcinspect.render import extensions as render

    fmt = c.check_format(fmt)
    modes = tuple(m for m, on in (("strict", strict), ("non-strict", non_strict)) if on) or ("strict", "non-strict")
    opts = c.options("inductor", "", False, "", True, device)
    request = ExportRequest(modes, tuple(sorted(set(dynamic_dim or ()))), aoti)
    rep = c.obtain(file, opts, export=request, model=model, inputs=inputs, fresh=fresh, debug=debug, timeout=timeout)
    c.emit(_checked(rep), fmt, output, lambda: render.exports(rep, graphs))
    c.exit_for(rep)
    if any(not e.ok or (e.aoti is not None and not e.aoti.ok) for e in rep.exports):
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def _checked(rep: Report) -> Report:
    if not rep.exports:
        raise UsageError("this report has no export section", "run `tcinspect export model.py`")
    return rep
