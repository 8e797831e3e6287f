"""`tcinspect codegen`: Inductor's output code as a kernel catalog."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from tcinspect.cli import app
from tcinspect.cli import common as c
from tcinspect.errors import UsageError
from tcinspect.render import codegen as render
from tcinspect.report import NOT_RUN, Report
from tcinspect.views import codegen_document, find_kernels, nearest_kernel_names

KernelOpt = Annotated[Optional[str], typer.Option(
    "--kernel", "-k", help="Show this kernel's code and metadata (exact name, substring or glob).", show_default=False)]
WrapperOpt = Annotated[bool, typer.Option("--wrapper", help="Show the whole generated wrapper code.")]
SaveOpt = Annotated[Optional[Path], typer.Option(
    "--save", help="Write each kernel and each wrapper to files in this directory.", show_default=False)]


@app.command(epilog="Example: tcinspect codegen sample_models/tiny.py --kernel cpp_fused")
def codegen(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    kernel: KernelOpt = None,
    wrapper: WrapperOpt = False,
    save: SaveOpt = None,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    model: c.ModelOpt = "model",
    inputs: c.InputsOpt = "example_inputs",
    device: c.DeviceOpt = "",
    mode: c.ModeOpt = "",
    fullgraph: c.FullgraphOpt = False,
    dynamic: c.DynamicOpt = "",
    no_backward: c.NoBackwardOpt = False,
    fresh: c.FreshOpt = False,
    timeout: c.TimeoutOpt = None,
    debug: c.DebugOpt = False,
) -> None:
    """List every kernel Inductor generated, in launch order: kind, fused ops, your source lines, sizes."""
    fmt = c.check_format(fmt)
    opts = c.options("inductor", mode, fullgraph, dynamic, no_backward, device)
    c.with_report(file, opts, model, inputs, fresh, script_args, debug=debug, timeout=timeout,
                  show=lambda rep: _show(rep, kernel, wrapper, save, fmt, output))


def _show(rep: Report, kernel: Optional[str], wrapper: bool, save: Optional[Path], fmt: str,
          output: Optional[Path]) -> None:
    if rep.stages.inductor.status == NOT_RUN and not rep.stages.inductor.outputs:
        why = rep.stages.inductor.error or "Inductor did not run"
        raise UsageError(f"this report has no Inductor output code ({why})",
                         "run `tcinspect trace FILE` (backend inductor) first")
    if save is not None:
        c.note(f"wrote {_save(rep, save)} files to {save}")
    if kernel is not None:
        matches = find_kernels(rep, kernel)
        if not matches:
            near = ", ".join(nearest_kernel_names(rep, kernel))
            raise UsageError(f"no kernel matches '{kernel}'", f"nearest names: {near}")
        c.emit_document(
            {"kernels": [k for o in codegen_document(rep)["outputs"] for k in o["kernels"]
                         if any(k["name"] == m.name and k["launch"] == m.launch for _, m in matches)]},
            fmt, output, lambda: _group([render.kernel_detail(o, k) for o, k in matches]))
        return
    if wrapper:
        c.emit_document({"wrappers": [{"compile_id": o.compile_id, "part": o.part, "code": o.wrapper}
                                      for o in rep.stages.inductor.outputs]},
                        fmt, output, lambda: _group([render.wrapper(o) for o in rep.stages.inductor.outputs]))
        return
    c.emit_document(codegen_document(rep), fmt, output, lambda: render.catalog(rep))


def _group(parts):
    from rich.console import Group

    return Group(*parts)


def _save(rep: Report, directory: Path) -> int:
    """Each kernel as <compile>_<part>_<n>_<name>.py/.cpp and each wrapper as <compile>_<part>_wrapper.py."""
    from tcinspect.serialize import write_atomic

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {directory}: {exc.strerror}", "choose a writable directory for --save") from None
    count = 0
    for o in rep.stages.inductor.outputs:
        stem = f"{o.compile_id.replace('/', '_')}_{o.part}"
        write_atomic(directory / f"{stem}_wrapper.py", o.wrapper)
        count += 1
        for i, k in enumerate(o.kernels):
            if not k.source:
                continue
            ext = "cpp" if k.language == "cpp" else "py"
            write_atomic(directory / f"{stem}_{i:02d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', k.name)}.{ext}", k.source + "\n")
            count += 1
    return count
