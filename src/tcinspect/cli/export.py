"""`tcinspect export`: torch.export in strict and non-strict mode, optionally through AOTInductor."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import ExportRequest

#: the spelling before --strict-export (--strict means "exit 2 on what the parser did not understand" elsewhere)
OldStrictOpt = Annotated[bool, typer.Option("--strict", hidden=True)]


@app.command("export", epilog="Example: tcinspect export sample_models/silu_export_matrix.py --dynamic-dim 0")
@c.capture_options("model_name inputs_name device fresh timeout debug")
def export_(
    file: c.FileArg = None,
    strict_export: Annotated[bool, typer.Option("--strict-export", help="Run strict (TorchDynamo) export.")] = False,
    old_strict: OldStrictOpt = False,
    non_strict: Annotated[bool, typer.Option("--non-strict", help="Run non-strict (Python tracing) export.")] = False,
    dynamic_dim: Annotated[Optional[list[int]], typer.Option(
        "--dynamic-dim", help="Mark this dimension of every tensor input dynamic (Dim); repeatable. 0: batch.",
        show_default=False, min=0)] = None,
    aoti: Annotated[bool, typer.Option("--aoti", help="Also compile and package with AOTInductor and check the "
                                                      "packaged model against eager.")] = False,
    graphs: Annotated[bool, typer.Option("--graphs/--no-graphs", help="Show each exported graph and signature.")] = True,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """Export the model with torch.export (strict and non-strict by default): per mode the graph, signature or failure (exit 1 if one failed)."""
    from tcinspect.render import extensions as render

    strict = strict_export or c.deprecated("export", "--strict", "--strict-export", old_strict)
    modes = tuple(m for m, on in (("strict", strict), ("non-strict", non_strict)) if on) or ("strict", "non-strict")
    request = ExportRequest(modes, tuple(sorted(set(dynamic_dim or ()))), aoti)
    rep = capture.obtain(file, compile=capture.compile(no_backward=True), export=request)
    c.emit(c.require(rep, rep.exports, "export section", "run `tcinspect export model.py`"), fmt, output,
           lambda: render.exports(rep, graphs))
    c.exit_for(rep, check_failed=any(not e.ok or (e.aoti is not None and not e.aoti.ok) for e in rep.exports))
