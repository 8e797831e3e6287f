"""`tcinspect trace`: every stage of one torch.compile run."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from tcinspect.cli import app
from tcinspect.cli import common as c
from tcinspect.errors import UsageError
from tcinspect.render import table as render

StageOpt = Annotated[Optional[List[str]], typer.Option(
    "--stage", "-s", help=f"Show only these stages ({', '.join(render.STAGES)}); repeat or comma-separate.",
    show_default=False)]


@app.command(epilog="Example: tcinspect trace sample_models/tiny.py --stage summary,inductor")
def trace(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    stage: StageOpt = None,
    code: Annotated[bool, typer.Option("--code", help="Also show graph and kernel code, highlighted.")] = False,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = "model",
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    backend: c.BackendOpt = "inductor",
    mode: c.ModeOpt = "",
    fullgraph: c.FullgraphOpt = False,
    dynamic: c.DynamicOpt = "",
    no_backward: c.NoBackwardOpt = False,
    fresh: c.FreshOpt = False,
    no_timings: Annotated[bool, typer.Option("--no-timings", help="Leave timings out of YAML/JSON.")] = False,
    timeout: c.TimeoutOpt = None,
    debug: c.DebugOpt = False,
) -> None:
    """Compile a model file once and show every stage: Dynamo graphs, guards, graph breaks, AOT graphs, kernels."""
    stages = _stages(stage)
    opts = c.options(backend, mode, fullgraph, dynamic, no_backward, device)
    fmt = c.check_format(fmt)
    c.with_report(file, opts, model, inputs, fresh, script_args, debug=debug, timeout=timeout,
                  show=lambda rep: c.emit(rep, fmt, output, lambda: render.trace(rep, stages, code), not no_timings))


def _stages(values: Optional[List[str]]) -> Optional[list[str]]:
    if not values:
        return None
    chosen = [v.strip() for value in values for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in render.STAGES]
    if unknown:
        raise UsageError(f"unknown stage '{unknown[0]}'", f"choose from {', '.join(render.STAGES)}")
    return chosen
