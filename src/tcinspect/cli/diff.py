"""`tcinspect diff`: what changed between two saved reports."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app


@app.command(epilog="Example: tcinspect diff before.yaml after.yaml")
@c.capture_options("rank strict jobs debug")
def diff(
    a: Annotated[str, typer.Argument(help="The earlier report (.yaml/.json) or TORCH_TRACE log.", show_default=False)],
    b: Annotated[str, typer.Argument(help="The later report (.yaml/.json) or TORCH_TRACE log.", show_default=False)],
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """Compare two saved reports: counts, graphs, graph breaks, recompiles and kernels added or removed."""
    from tcinspect import request
    from tcinspect.analysis import diff as diffing
    from tcinspect.render import diff as render

    # saved reports or logs, never a capture
    loaded = [request.load(f, capture.rank, capture.strict, capture.jobs) for f in (a, b)]
    for one in loaded:
        if one.warning:
            c.note(f"warning: {one.warning}")
    ra, rb = loaded[0].report, loaded[1].report
    d = diffing.diff(ra, rb)
    c.emit_document(diffing.document(d, a, b), fmt, output, lambda: render.diff(d, a, b))
