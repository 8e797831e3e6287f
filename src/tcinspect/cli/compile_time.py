"""`tcinspect compile-time`: where compile time went, per compile and per phase, and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.report import Report

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, yaml, json or html (the whole report's page, "
                                                               "with the compile timeline).",
                                        callback=c.choice("--format", ("table", "yaml", "json", "html")))]
PerfettoOpt = Annotated[Optional[Path], typer.Option(
    "--perfetto", help="Also write the compile's phases as Chrome trace-event JSON (open it in ui.perfetto.dev or "
                       "chrome://tracing); one process per rank.", show_default=False, metavar="FILE")]


@app.command("compile-time", epilog="Example: tcinspect compile-time sample_models/tiny.py --fresh --perfetto "
                                    "compile.json")
@c.capture_options(f"{c.MODEL_FILE} backend mode dynamic no_backward fresh timeout {c.RANKS} {c.LOGS}")
def compile_time(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    perfetto: PerfettoOpt = None,
    tree: Annotated[bool, typer.Option("--tree", help="Also show each compile's phase tree (spans of 1% of it or "
                                                      "more).")] = False,
    fmt: FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """The slowest compiles and phases (Dynamo, AOTAutograd, Inductor, kernel compile, autotuning, caches), forward and backward, the FX graph and AOTAutograd cache states, and what to do."""
    rep = capture.obtain(file, script_args)
    _show(rep, fmt, output, perfetto, tree)
    c.exit_for(rep)


def _show(rep: Report, fmt: str, output: Optional[Path], perfetto: Optional[Path], tree: bool) -> None:
    from rich.console import Group

    from tcinspect.analysis import compile_time as views
    from tcinspect.analysis import divergence
    from tcinspect.render import compile_time as render
    from tcinspect.render import ranks

    if perfetto is not None:
        from tcinspect import interrupts, outfile

        interrupts.check()
        outfile.write(perfetto, render.chrome_trace(rep), option="--perfetto")
        c.note(f"wrote {perfetto} (Chrome trace events: ui.perfetto.dev or chrome://tracing)")
    if fmt == "html" or (output is not None and output.suffix.lower() == ".html" and fmt == "table"):
        from tcinspect.render import html

        c.emit(rep, "html" if fmt == "html" else fmt, output, lambda: render.table(rep),
               pages={"html": lambda: html.render(rep)})
        return

    def table(r: Report) -> Any:
        return Group(render.table(r), render.trees(r)) if tree else render.table(r)

    c.emit_document(divergence.document(rep, views.document), fmt, output, lambda: ranks.per_rank(rep, table, id))
