"""`tcinspect diff`: what changed between two saved reports."""

from __future__ import annotations

from typing import Annotated

import typer

from tcinspect.cli import app
from tcinspect.cli import common as c


@app.command(epilog="Example: tcinspect diff before.yaml after.yaml")
def diff(
    a: Annotated[str, typer.Argument(help="The earlier report (.yaml/.json).", show_default=False)],
    b: Annotated[str, typer.Argument(help="The later report (.yaml/.json).", show_default=False)],
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    debug: c.DebugOpt = False,
) -> None:
    """Compare two saved reports: counts, graphs, graph breaks, recompiles and kernels added or removed."""
    from tcinspect import cache, diffing
    from tcinspect.render import diff as render

    fmt = c.check_format(fmt)
    ra, rb = cache.read_report(a), cache.read_report(b)
    d = diffing.diff(ra, rb)
    c.emit_document(diffing.document(d, a, b), fmt, output, lambda: render.diff(d, a, b))
