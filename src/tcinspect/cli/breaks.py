"""`tcinspect breaks`: every distinct graph break, where it is, and how to fix it."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType

from tcinspect.analysis import divergence, fixes
from tcinspect.analysis.breaks import breaks_document, fullgraph_ok
from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.render import breaks as render
from tcinspect.render import fixes as render_fixes
from tcinspect.render import ranks
from tcinspect.render.parts import plural
from tcinspect.report import Options, Report, Request

FullgraphCheck = Annotated[bool, typer.Option(
    "--check-fullgraph", help="Also say whether the model compiles with fullgraph=True (exit 1 if it does not).")]
#: the spelling before --check-fullgraph (--fullgraph passes fullgraph=True to torch.compile elsewhere)
OldFullgraphCheck = Annotated[bool, typer.Option("--fullgraph", hidden=True)]
TryFixes = Annotated[bool, typer.Option(
    "--try-fixes", help="Re-run the model once per torch._dynamo.config fix the breaks suggest (e.g. "
                        "capture_scalar_outputs=True), each a fresh capture in a child process checked against eager, "
                        "and show graph breaks, eager frames, calls captured and recompiles before -> after. A model "
                        "file only (exit 2 for a saved report, a log or a script).")]


@app.command(epilog="Example: tcinspect breaks sample_models/graph_breaks.py")
@c.capture_options(f"{c.MODEL_FILE} backend dynamic no_backward fresh timeout {c.RANKS} {c.LOGS}",
                   backend=(c.DynamoBackendOpt, "eager"))
def breaks(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    check_fullgraph: FullgraphCheck = False,
    old_fullgraph: OldFullgraphCheck = False,
    try_fixes: TryFixes = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """List each distinct graph break: your file:line, PyTorch's reason and hints, and a suggested fix."""
    fullgraph = check_fullgraph or c.deprecated("breaks", "--fullgraph", "--check-fullgraph", old_fullgraph)
    opts = capture.compile()
    if try_fixes:  # before anything compiles
        from tcinspect.request import check_try_fixes

        check_try_fixes(capture.request(file, script_args))
    # a full Inductor trace of the same file answers too: its Dynamo stage is the same
    rep = capture.obtain(file, script_args, compile=opts, also_accept=(Options.of(replace(opts, backend="inductor")),))
    trials = _tried(capture.request(file, script_args), rep) if try_fixes and rep.failure is None else None

    def document(x: Report) -> dict[str, Any]:
        return breaks_document(x, fullgraph, trials)

    def view(x: Report) -> RenderableType:
        return Group(render.breaks(x, fullgraph, trials), render_fixes.fixes_view(x, trials))

    c.emit_document(divergence.document(rep, document), fmt, output,
                    lambda: ranks.per_rank(rep, view, divergence.breaks_key))
    c.exit_for(rep, check_failed=fullgraph and not all(fullgraph_ok(x) for _, x in divergence.per_rank(rep)))


def _tried(request: Request, rep: Report) -> tuple[fixes.FixTrial, ...]:
    """Each config fix of ``rep``'s breaks, tried one after another, with a spinner naming it."""
    from tcinspect.request import try_fix

    todo = fixes.candidates(rep)
    start = time.perf_counter()
    trials = []
    for i, fix in enumerate(todo, 1):
        with c.progress(f"trying {fix.setting} ({i}/{len(todo)}) …"):
            trials.append(try_fix(request, rep, fix))
    if todo:
        c.note(f"tried {plural(len(todo), 'config fix', 'config fixes')} in {time.perf_counter() - start:.1f} s, "
               "each a fresh capture in a child process")
    return tuple(trials)
