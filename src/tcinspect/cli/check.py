"""`tcinspect check`: fail a CI build when graph breaks, recompiles or kernels regress."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from tcinspect.cli import common as c
from tcinspect.cli._app import app
from tcinspect.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from tcinspect.analysis.check.outcome import Outcome
    from tcinspect.analysis.check.plan import Model, Plan
    from tcinspect.report import Report


def _max(flag: str, what: str) -> typer.models.OptionInfo:
    return typer.Option(flag, help=f"Fail when {what} exceed this.", show_default=False, min=0)


MaxBreaks = Annotated[Optional[int], _max("--max-graph-breaks", "graph breaks")]
MaxGraphs = Annotated[Optional[int], _max("--max-graphs", "graphs")]
MaxRecompiles = Annotated[Optional[int], _max("--max-recompiles", "recompiles")]
MaxKernels = Annotated[Optional[int], _max("--max-kernels", "kernels")]
MaxCompileTime = Annotated[Optional[float], typer.Option(
    "--max-compile-time", help="Fail when compile time (forward and backward, seconds) exceeds this.",
    show_default=False, min=0, metavar="S")]
MaxCudagraphSkips = Annotated[Optional[int], _max(
    "--max-cudagraph-skips", "CUDA graph skips: those torch logged, and graphs nothing was captured for "
    "(--mode reduce-overhead)")]
MinCudagraphCoverage = Annotated[Optional[float], typer.Option(
    "--min-cudagraph-coverage", help="Fail when less than this share (0-1) of the compiled graphs' kernels run "
                                     "inside CUDA graphs (--mode reduce-overhead on a GPU; elsewhere said, not "
                                     "checked).", show_default=False, min=0, max=1, metavar="SHARE")]
MaxCudagraphRecordings = Annotated[Optional[int], _max(
    "--max-cudagraph-recordings", "CUDA graph recordings, re-recordings included (--mode reduce-overhead)")]
MinRegionReuse = Annotated[Optional[float], typer.Option(
    "--min-region-reuse", help="Fail when a compiled region's calls reuse an earlier call's subgraph less than this "
                               "share (0-1), or a block compiled on its own recompiled.",
    show_default=False, min=0, max=1, metavar="SHARE")]
CompileTimeTolerance = Annotated[Optional[float], typer.Option(
    "--compile-time-tolerance", help="With --baseline: fail when compile time is more than this many percent above "
                                     "the baseline's (relative, per model); with --update: record compile time.",
    show_default=False, min=0, metavar="PCT")]
MaxGuardLatency = Annotated[Optional[float], typer.Option(
    "--max-guard-latency-us", help="Fail when a compile's guard latency (microseconds, as torch measured it) "
                                   "exceeds this.", show_default=False, min=0, metavar="US")]
GuardLatencyTolerance = Annotated[Optional[float], typer.Option(
    "--guard-latency-tolerance", help="With --baseline: fail when the largest guard latency is more than this many "
                                      "percent above the baseline's; with --update: record it.",
    show_default=False, min=0, metavar="PCT")]
MaxSavedBytes = Annotated[Optional[int], typer.Option(
    "--max-saved-bytes", help="Fail when the forward graphs save more than this many bytes for backward "
                              "(tcinspect memory).", show_default=False, min=0, metavar="BYTES")]
MaxFallbacks = Annotated[Optional[int], _max(
    "--max-fallbacks-to-eager", "frames Dynamo gave up on and ran eagerly (PyTorch CI's fallbacks_to_eager)")]
MinCoverage = Annotated[Optional[float], typer.Option(
    "--min-coverage", help="Fail when less than this share (0-1) of the ATen ops one measured call runs ran "
                           "compiled (a model file; elsewhere said, not checked).",
    show_default=False, min=0, max=1, metavar="SHARE")]
CallsCapturedTolerance = Annotated[float, typer.Option(
    "--calls-captured-tolerance", help="With --baseline: fail when calls captured drop more than this many percent "
                                       "below the baseline's (PyTorch CI's rule).", min=0, metavar="PCT")]
MaxPeakRatio = Annotated[Optional[float], typer.Option(
    "--max-peak-ratio", help="Fail when one training step's peak memory compiled over eager exceeds this "
                             "(measured on a CUDA device only; elsewhere said, not checked).",
    show_default=False, min=0, metavar="RATIO")]


CheckTimeoutOpt = Annotated[Optional[float], typer.Option(
    "--timeout", help="Seconds before a capture is stopped (default 1800); check compiles in a child process so "
                      "a crash or hang fails the build with exit 4.", show_default=False, min=1)]

#: check's --timeout when none is given: a CI gate compiles in a child process, so that it ends with a verdict
DEFAULT_TIMEOUT = 1800.0


@app.command(epilog="Example: tcinspect check sample_models/graph_breaks.py --max-graph-breaks 3 --format github")
@c.capture_options("model_name script inputs_name device backend mode dynamic no_backward fresh timeout nproc launcher_args rank "
                   "strict jobs debug", timeout=(CheckTimeoutOpt, None))
def check(
    files: Annotated[Optional[list[str]], typer.Argument(
        help="Model files or saved reports (default: `models` in [tool.tcinspect]).", show_default=False)] = None,
    max_graph_breaks: MaxBreaks = None,
    max_graphs: MaxGraphs = None,
    max_recompiles: MaxRecompiles = None,
    max_kernels: MaxKernels = None,
    max_compile_time: MaxCompileTime = None,
    compile_time_tolerance: CompileTimeTolerance = None,
    max_cudagraph_skips: MaxCudagraphSkips = None,
    max_cudagraph_recordings: MaxCudagraphRecordings = None,
    baseline: Annotated[Optional[Path], typer.Option(
        "--baseline", help="Compare against this snapshot (default: `baseline` in [tool.tcinspect]).",
        show_default=False)] = None,
    update: Annotated[bool, typer.Option("--update", help="Rewrite the baseline from this run.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, github or json.",
                                     callback=c.choice("--format", ("table", "github", "json")))] = "table",
    junit: Annotated[Optional[Path], typer.Option("--junit", help="Also write JUnit XML here.", show_default=False)] = None,
    *,
    capture: c.Capture,
    max_specializations: Annotated[Optional[int], typer.Option(
        "--max-specializations", help="Fail when more sizes than this are made constants by the code "
                                      "(symbolic_shape_specialization), besides --static-ok sources.",
        show_default=False, min=0)] = None,
    static_ok: Annotated[Optional[list[str]], typer.Option(
        "--static-ok", help="A size source allowed to be made constant, e.g. \"L['x'].size()[0]\" (repeatable); "
                            "any other specialization fails.", show_default=False, metavar="SOURCE")] = None,
    max_guard_latency_us: MaxGuardLatency = None,
    guard_latency_tolerance: GuardLatencyTolerance = None,
    min_region_reuse: MinRegionReuse = None,
    max_saved_bytes: MaxSavedBytes = None,
    max_peak_ratio: MaxPeakRatio = None,
    max_fallbacks_to_eager: MaxFallbacks = None,
    min_coverage: MinCoverage = None,
    min_cudagraph_coverage: MinCudagraphCoverage = None,
    calls_captured_tolerance: CallsCapturedTolerance = 5.0,
    expect_warm: Annotated[bool, typer.Option(
        "--expect-warm", help="With --baseline: fail when a compile cache look-up that hit in the baseline misses "
                              "now, naming torch's reason and the key components that changed; with --update: "
                              "record the look-ups that hit.")] = False,
) -> None:
    """Check model files against budgets and a baseline (with --nproc: every rank, and fail when ranks diverge). Exit 0 all hold, 1 a regression, 2 bad input, 3 a stage failed, 4 a capture crashed or timed out."""
    from tcinspect.analysis.check.judge import Budgets
    from tcinspect.analysis.check.limits import Limits
    from tcinspect.analysis.check.plan import Plan, verdict

    if capture.timeout is None and not c.in_process_asked():
        # only $TCINSPECT_IN_PROCESS (the test suite's) compiles in this process; --timeout always isolates
        capture = replace(capture, values={**capture.values, "timeout": DEFAULT_TIMEOUT})
    limits = Limits(max_graphs, max_graph_breaks, max_recompiles, max_kernels, max_compile_time,
                    cudagraph_skips=max_cudagraph_skips, cudagraph_recordings=max_cudagraph_recordings,
                    guard_latency_us=max_guard_latency_us, min_region_reuse=min_region_reuse,
                    saved_bytes=max_saved_bytes, peak_ratio=max_peak_ratio, fallbacks_to_eager=max_fallbacks_to_eager,
                    min_coverage=min_coverage, min_cudagraph_coverage=min_cudagraph_coverage)
    budgets = Budgets(max_specializations, tuple(static_ok or ()), compile_time_tolerance, guard_latency_tolerance,
                      expect_warm, calls_captured_tolerance)
    plan = Plan.of(files or [], limits, budgets, baseline, update, ranks=capture.nproc is not None)
    result = verdict(plan, _reports(capture, plan))

    if plan.update:
        assert plan.baseline_path is not None  # refused by Plan.of: --update needs a baseline path
        _update(plan.baseline_path, result.snapshots)
    _show(result.outcome, fmt, junit)
    if result.outcome.failed:
        raise typer.Exit(int(ExitCode.CHECK_FAILED))


def _reports(capture: c.Capture, plan: Plan) -> Iterator[tuple[Model, Report]]:
    """Each model's report, obtained when the verdict reaches it; a model whose compile failed stops the check
    there: its budgets cannot be judged."""
    for model in plan.models:
        rep = capture.obtain(model.path, measure_memory=model.measure_memory)
        c.exit_for(rep)
        yield model, rep


def _update(path: Path, snapshots: dict[str, dict[str, Any]]) -> None:
    """Rewrite the baseline atomically, keeping entries of models not checked in this run."""
    from tcinspect import interrupts, outfile
    from tcinspect.analysis.check.baseline import updated

    interrupts.check()
    text = updated(path, snapshots)
    try:
        outfile.write(path, text, option="--baseline")
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc.strerror or exc}",
                         "check the path; the old baseline was left as it was") from None
    c.note(f"updated {path} ({len(snapshots)} model(s))")


def _show(outcome: Outcome, fmt: str, junit: Optional[Path]) -> None:
    """The outcome on stdout in ``fmt``, and as JUnit XML in the --junit file."""
    from tcinspect.render import checks as render

    if junit is not None:
        from tcinspect import interrupts, outfile

        interrupts.check()
        outfile.write(junit, render.junit(outcome), option="--junit")
        c.note(f"wrote {junit}")
    if fmt == "github":
        sys.stdout.write(render.github(outcome))
    else:
        c.emit_document(render.document(outcome), fmt, None, lambda: render.table(outcome))
