"""`tcinspect verify`: eager against compiled, outputs and gradients (the golden-model test)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import VerifyRequest

TolOpt = Optional[float]


@app.command(epilog="Example: tcinspect verify sample_models/silu_pass.py --backend aot_eager "
                    "--pass sample_models/silu_pass.py:rewrite_silu")
@c.capture_options("backend passes rtol atol fmt output model_name inputs_name device mode fullgraph dynamic no_backward fresh "
                   "timeout debug")
def verify(
    file: c.FileArg = None,
    rtol: Annotated[TolOpt, typer.Option("--rtol", help="Relative tolerance for every tensor (default: by dtype).",
                                         show_default=False, min=0)] = None,
    atol: Annotated[TolOpt, typer.Option("--atol", help="Absolute tolerance for every tensor (default: by dtype).",
                                         show_default=False, min=0)] = None,
    no_locate: Annotated[bool, typer.Option("--no-locate", help="On a mismatch, do not search for the graph node "
                                            "(or backend stage) where results first depart.")] = False,
    locate_budget: Annotated[float, typer.Option("--locate-budget", metavar="SECONDS", min=0,
                                                 help="Stop that search after this many seconds, with what it "
                                                 "found.")] = 120.0,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """Run the model eagerly and compiled on the same inputs; compare every output and gradient (exit 1 on a mismatch)."""
    from tcinspect.render import extensions as render

    # on a mismatch the capture itself locates where results first depart (in its child: --timeout bounds it)
    request = capture.request(file, verify=VerifyRequest(rtol, atol, None if no_locate else locate_budget))
    rep = c.obtain(request, capture.debug or bool(c.DEBUG))
    if rep.verification is None:
        c.exit_for(rep)  # the capture failed before the compiled call: its own line and exit code
    c.emit(c.require(rep, rep.verification, "verify section",
                     "run `tcinspect verify model.py` to compare eager and compiled"), fmt, output,
           lambda: render.verification(rep))
    c.exit_for(rep, check_failed=rep.verification is not None and not rep.verification.ok)

