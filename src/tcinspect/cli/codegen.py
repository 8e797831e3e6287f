"""`tcinspect codegen`: Inductor's output code as a kernel catalog."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from tcinspect.analysis.bench import BENCH_SORTS, bench_rows, kernel_time_share
from tcinspect.analysis.codegen import codegen_document
from tcinspect.analysis.kernels import find_kernels, kernels_of_line, kernels_of_module, nearest_kernel_names
from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import UsageError
from tcinspect.render import bench as render_bench
from tcinspect.render import codegen as render
from tcinspect.render.bench import bench_document
from tcinspect.render.table import ROW_LIMIT
from tcinspect.report import NOT_RUN, BenchRequest, CompileOptions, Report

KernelOpt = Annotated[Optional[str], typer.Option(
    "--kernel", "-k", help="Show this kernel's code and metadata (exact name, substring or glob).", show_default=False)]
WrapperOpt = Annotated[bool, typer.Option("--wrapper", help="Show the whole generated wrapper code.")]
SaveOpt = Annotated[Optional[Path], typer.Option(
    "--save", help="Write each kernel and each wrapper to files in this directory.", show_default=False)]
BenchOpt = Annotated[bool, typer.Option(
    "--bench", help="Time every kernel on the CUDA GPU (median of --bench-runs runs) and place it on the roofline: "
                    "GB/s and TFLOP/s against the device's peaks, and eager vs compiled per call. Implies --device cuda.")]
BenchRunsOpt = Annotated[int, typer.Option("--bench-runs", help="Timed runs per kernel for --bench.", min=5)]
LineOpt = Annotated[Optional[str], typer.Option(
    "--line", help="What did this line become? The kernels whose provenance names FILE:LINE (a basename is enough).",
    show_default=False)]
ModuleOpt = Annotated[Optional[str], typer.Option(
    "--module", help="What did this module become? The kernels made from module PATH or its submodules, "
                     "e.g. transformer.h.0.attn.", show_default=False)]
TryModeOpt = Annotated[Optional[str], typer.Option(
    "--try-mode", help="With --bench: also compile with this torch.compile mode (e.g. reduce-overhead, CUDA graphs) "
                       "and time its step beside the default's.", show_default=False)]
SortOpt = Annotated[str, typer.Option("--sort", help="--bench table order: step (most GPU time in the real step "
                                                     "first), time (slowest isolated replay first), peak (furthest "
                                                     "below the roofline first) or launch.",
                                      callback=c.choice("--sort", BENCH_SORTS, "pass --sort step, time, peak or launch",
                                                        lower=False))]


@app.command(epilog="Example: tcinspect codegen sample_models/tiny.py --kernel cpp_fused; on a GPU: "
                     "tcinspect codegen sample_models/transformer_block.py --bench --sort peak")
@c.capture_options(f"{c.MODEL_FILE} backend passes mode fullgraph dynamic no_backward fresh timeout rank {c.LOGS}")
def codegen(
    file: c.FileArg = None,
    script_args: c.ScriptArgs = None,
    kernel: KernelOpt = None,
    line: LineOpt = None,
    module: ModuleOpt = None,
    wrapper: WrapperOpt = False,
    save: SaveOpt = None,
    all_rows: Annotated[bool, typer.Option("--all", help="Every kernel in the tables (else the first 50 of each).")] = False,
    bench: BenchOpt = False,
    bench_runs: BenchRunsOpt = 100,
    sort: SortOpt = "step",
    try_mode: TryModeOpt = None,
    fmt: c.FormatOpt = "table",
    output: c.OutputOpt = None,
    *,
    capture: c.Capture,
) -> None:
    """List every kernel Inductor generated, in launch order: kind, fused ops, your source lines, sizes."""
    opts = capture.compile()
    if try_mode is not None and not bench:
        raise UsageError("--try-mode measures a mode beside --bench's step", "add --bench")
    if try_mode is not None and try_mode not in TRY_MODES:
        raise UsageError(f"--try-mode {try_mode!r} is not a torch.compile mode", f"pass one of {', '.join(TRY_MODES)}")
    bench_request = None
    if bench:
        opts = _bench_options(opts, sort, wrapper or save is not None)
        bench_request = BenchRequest(bench_runs, try_mode or "")
    if line is not None and module is not None:
        raise UsageError("--line and --module are two questions", "ask one at a time")
    if line is not None:
        _check_line(line)
    query = ("line", line) if line is not None else ("module", module) if module is not None else None
    rep = capture.obtain(file, script_args, compile=opts, bench=bench_request)
    if query is not None:
        _show_query(rep, query, fmt, output)
    elif bench:
        _show_bench(rep, kernel, sort, fmt, output)
    else:
        _show(rep, kernel, wrapper, save, fmt, output, all_rows)
    c.exit_for(rep)


def _check_line(spec: str) -> None:
    path, sep, number = spec.rpartition(":")
    if not sep or not path or not number.isdigit():
        raise UsageError(f"--line {spec!r} is not FILE:LINE", "pass e.g. --line model.py:42")


def _show_query(rep: Report, query: tuple[str, str], fmt: str, output: Optional[Path]) -> None:
    """--line / --module: the kernels one line or one module became, with their time share under --bench."""
    what, value = query
    matches = kernels_of_line(rep, value) if what == "line" else kernels_of_module(rep, value)
    shares = kernel_time_share(rep)
    if not matches:
        known = sorted({m for o in rep.stages.inductor.outputs for k in o.kernels for m in k.modules})
        hint = (f"modules in this report: {', '.join(known[:8])}{' …' if len(known) > 8 else ''}" if what == "module"
                else "pass a line Inductor's stack traces name: `tcinspect codegen FILE --kernel NAME` lists a kernel's frames")
        raise UsageError(f"no kernel comes from {what} {value}", hint)
    doc = {"query": {what: value}, "kernels": [
        {"compile_id": o.compile_id, "part": o.part, "index": i, "name": k.name, "kind": k.kind,
         "provenance": k.provenance, "modules": list(k.modules), "user_lines": list(k.user_lines),
         "source_nodes": list(k.source_nodes),
         **({"time_share": round(shares[(o.compile_id, o.part, i)], 4)} if (o.compile_id, o.part, i) in shares else {})}
        for o, i, k in matches]}
    c.emit_document(doc, fmt, output, lambda: render.query(f"{what} {value}", matches, shares))


#: torch.compile's modes (torch/__init__.py: compile's ``mode``)
TRY_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _bench_options(opts: CompileOptions, sort: str, other_view: bool) -> CompileOptions:
    """--bench: the capture times the kernels (a cache entry without timings never answers it)."""
    if other_view:
        raise UsageError("--bench is a view of its own", "leave out --wrapper and --save with --bench")
    return replace(opts, device=opts.device or "cuda")


def _show_bench(rep: Report, kernel: Optional[str], sort: str, fmt: str, output: Optional[Path]) -> None:
    c.require(rep, rep.bench, "kernel benchmark (it was not captured with --bench)",
              "re-run on a machine with a CUDA GPU: tcinspect codegen MODEL.py --bench")
    rows = bench_rows(rep, sort)
    if kernel is not None:
        rows = [r for r in rows if fnmatch.fnmatchcase(r[1].name, kernel) or kernel in r[1].name]
        if not rows:
            raise UsageError(f"no benchmarked kernel matches '{kernel}'", "leave out --kernel to see them all")
    doc = bench_document(rep, sort)
    doc["kernels"] = [k for k in doc["kernels"] if any(k["launch"] == n for n, _ in rows)]
    c.emit_document(doc, fmt, output, lambda: render_bench.view(rep, rows, sort))


def _show(rep: Report, kernel: Optional[str], wrapper: bool, save: Optional[Path], fmt: str,
          output: Optional[Path], all_rows: bool = False) -> None:
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
    c.emit_document(codegen_document(rep), fmt, output, lambda: render.catalog(rep, None if all_rows else ROW_LIMIT))


def _group(parts):
    from rich.console import Group

    return Group(*parts)


def _save(rep: Report, directory: Path) -> int:
    """Each kernel as <compile>_<part>_<n>_<name>.py/.cpp and each wrapper as <compile>_<part>_wrapper.py."""
    from tcinspect import outfile

    def write_atomic(path: Path, text: str) -> None:
        outfile.write(path, text, option="--save")

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {directory}: {exc.strerror}", "choose a writable directory for --save") from None
    count = 0
    try:
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
    except OSError as exc:
        raise UsageError(f"cannot write in {directory}: {exc.strerror or exc}", "choose a writable directory for --save") from None
    return count
