"""`tcinspect trace`: every stage of one torch.compile run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import UsageError
from tcinspect.render import table as render
from tcinspect.report import Report

if TYPE_CHECKING:
    from rich.console import RenderableType

StageOpt = Annotated[Optional[list[str]], typer.Option(
    "--stage", "-s", help=f"Show only these stages ({', '.join(render.STAGES)}); repeat or comma-separate.",
    show_default=False)]
FormatOpt = Annotated[str, typer.Option(
    "--format", "-f", help="table, yaml, json, html (one self-contained page, graphs drawn) or svg (the graphs).",
    callback=c.choice("--format", ("table", "yaml", "json", "html", "svg")))]
OutputOpt = Annotated[Optional[Path], typer.Option(
    "--output", "-o", help="Write the report to this file: .yaml, .json, .html or .svg (the format follows the "
                           "name unless --format is given).", show_default=False)]
GraphOpt = Annotated[Optional[list[str]], typer.Option(
    "--graph", help="With --format svg: draw only this graph, a Dynamo compile id (1/0) or an Inductor AOT id "
                    "(0_forward); repeatable.", show_default=False, metavar="ID")]


@app.command(epilog="Example: tcinspect trace sample_models/tiny.py --stage summary,inductor  ·  "
                    "tcinspect trace sample_models/tiny.py -o report.html")
@c.capture_options(f"{c.MODEL_FILE} backend passes mode fullgraph dynamic no_backward fresh no_timings timeout "
                   f"{c.RANKS} {c.LOGS}")
def trace(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    stage: StageOpt = None,
    code: Annotated[bool, typer.Option("--code", help="Also show graph and kernel code, highlighted.")] = False,
    all_rows: Annotated[bool, typer.Option("--all", help=f"Show every row of the node and kernel tables (default: "
                                                         f"the first {render.ROW_LIMIT} of each).")] = False,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    graph: GraphOpt = None,
    *,
    capture: c.Capture,
    no_timings: Annotated[bool, typer.Option("--no-timings", help="Leave timings out of YAML/JSON.")] = False,
) -> None:
    """Compile a model file once: the findings that need action first, then every stage: Dynamo graphs, guards, graph breaks, AOT graphs, kernels."""
    stages = _stages(stage)
    limit = None if all_rows else render.ROW_LIMIT
    opts = capture.compile()
    if graph and fmt != "svg" and not (output and output.suffix.lower() == ".svg"):
        raise UsageError("--graph picks graphs to draw, so it needs --format svg", "add --format svg or -o graph.svg")
    rep = capture.obtain(file, script_args, compile=opts)
    # with -o FILE the terminal gets the summary and where the file went (every stage is in the file), unless
    # --stage asks for more
    shown = ["summary"] if output is not None and stages is None else stages
    c.emit(rep, fmt, output, lambda: _table(rep, shown, code, limit), not no_timings, pages=_pages(rep, graph or ()))
    c.exit_for(rep)


def _table(rep: Report, stages: Optional[Sequence[str]], code: bool, limit: Optional[int]) -> RenderableType:
    """The terminal view; a distributed report's findings lead it (a single report's follow its header)."""
    from rich.console import Group
    from rich.text import Text

    from tcinspect.render import findings, ranks

    view = ranks.trace(rep, stages, code, limit)
    if not rep.ranks or (stages is not None and "summary" not in stages):
        return view
    return Group(findings.block(rep), Text(""), view)


def _pages(rep: Report, graphs: Sequence[str]) -> dict[str, Callable[[], str]]:
    """The formats drawn from the whole report, rendered only when chosen."""
    return {"html": lambda: _html(rep), "svg": lambda: _svg(rep, graphs)}


def _html(rep: Report) -> str:
    from tcinspect.render import html  # Graphviz and Pygments only when a page is written

    with _drawing() as tick:
        return html.render(rep, tick)


def _svg(rep: Report, graphs: Sequence[str]) -> str:
    from tcinspect.render import svg

    with _drawing():
        return svg.svg(rep, graphs)


@contextlib.contextmanager
def _drawing() -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (a terminal's only) while graphs are laid out: ``tick(done, total)``."""
    if not c.err_console.is_terminal:
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("drawing graphs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=c.err_console, transient=True) as bar:
        task = bar.add_task("draw", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _stages(values: Optional[list[str]]) -> Optional[list[str]]:
    if not values:
        return None
    chosen = [v.strip() for value in values for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in render.STAGES]
    if unknown:
        raise UsageError(f"unknown stage '{unknown[0]}'", f"choose from {', '.join(render.STAGES)}")
    return chosen
