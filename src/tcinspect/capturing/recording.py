"""One recorded compile: the Recorder on torch's trace and torch set up for the duration (Run: a private Inductor
cache for --fresh, torch's logs quieted, Dynamo config, provenance tracking, CUDA graph logs), each call made and a
failure classified, then what one more call of the compiled model measures (runtime coverage, --per-call, --bench,
memory). capture_loaded records a loaded model's calls; engine.py's script capture runs a script under a Run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing import _compat, custom, gpu_timing, memory, modelfile, outputs, shapespec, verify
from tcinspect.capturing.recorder import EVENTS_FILE_ENV, Recorder
from tcinspect.errors import DeviceError, UsageError
from tcinspect.parse import assemble, cudagraphs, roofline
from tcinspect.parse import events as ev_mod
from tcinspect.parse.fromevents import report_from_events
from tcinspect.report import InputSetError, Options, Report, Target, Verification, VerifyRequest

#: Calls made of each input set under a CUDA-graph mode on a GPU: a warm-up, a recording, a replay.
CUDAGRAPH_CALLS = 3


def check_device(device: str) -> None:
    """Refuse, before anything runs, a CUDA device on a machine without one, or a device tcinspect does not know."""
    if device in ("", "cpu"):
        return
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError("--device cuda was asked for, but this machine has no CUDA GPU (torch.cuda.is_available() is False)",
                          "run on a GPU machine, or use --device cpu")
    if not device.startswith(("cuda", "cpu")):
        raise UsageError(f"unknown device '{device}'", "use --device cpu or --device cuda")


def device_of(model: Any, inputs: modelfile.Call) -> str:
    """The device a model runs on: its first tensor input's, else its first parameter's, else cpu."""
    import torch

    for value in inputs.values():
        if isinstance(value, torch.Tensor):
            return value.device.type
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device.type
    return "cpu"


def failure_of(exc: BaseException, custom_backend: str = "") -> assemble.StageFailure:
    """The typed failure a compiler exception makes: its stage's, or the user's backend or pass (``user_target``)."""
    root = _compat.exceptions.compiler_error_root(exc)
    stage = _compat.exceptions.stage_of_exception(exc)
    if isinstance(root, custom.UserTargetError):
        return assemble.StageFailure(stage, str(root), blame=str(root), fix=root.fix, kind="user_target")
    if custom_backend and not _compat.exceptions.raised_in_torch(root):
        # the user's own backend raised (not torch code it called into): their bug, like a model that
        # raises; Dynamo's stage is where it called the backend
        msg = f"--backend '{custom_backend}' raised {modelfile.describe(root)}"
        return assemble.StageFailure("dynamo", msg, blame=msg, fix="fix the backend (--debug shows the traceback)",
                                kind="user_target")
    return assemble.StageFailure(stage, modelfile.describe(root))


class Run:
    """One recorded compile: the handler, the caches and the failure, if any."""

    def __init__(self, options: Options, fresh: bool, quiet: bool = False) -> None:
        self.options = options
        self.fresh = fresh
        self.quiet = quiet
        self.recorder = Recorder(os.environ.get(EVENTS_FILE_ENV))
        self.failure: Optional[assemble.StageFailure] = None
        self.seconds = 0.0
        self.calls = 0
        self.input_errors: list[InputSetError] = []
        # what torch.compile gets as backend=: a name, or a callable (custom backend, --pass pipeline)
        self.backend, self.custom_backend = custom.build_backend(options.backend, options.passes)
        self.side_table: assemble.SideTable = ({}, {})
        self.verification: Optional[Verification] = None
        self.reference: Optional[verify.Reference] = None  # eager outputs and gradients (verify)
        #: under a CUDA-graph mode on a GPU: each call starts a step (torch.compiler.cudagraph_mark_step_begin)
        self.cudagraph_steps = False
        self.counters_before: dict[str, Any] = {"stats": {}, "frames": {}, "graph_break": 0}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        _compat.dynamo.reset_dynamo()
        # torch's counters live as long as the process (reset() leaves them): this run's are the difference
        self.counters_before = _compat.dynamo.dynamo_counters()
        start = time.perf_counter()
        with contextlib.ExitStack() as stack:
            if self.fresh:
                stack.enter_context(_compat.caches.private_inductor_cache())
            if self.quiet:
                stack.enter_context(_compat.trace.quiet_torch_logs())
            # torch._dynamo.config settings asked for (breaks --try-fixes), restored as the recording ends
            stack.enter_context(_compat.dynamo.dynamo_config(self.options.dynamo_config))
            stack.enter_context(_compat.provenance.provenance_tracking(self.recorder.output_code_files))
            stack.enter_context(_compat.trace.inductor_memory_estimates(ev_mod.INDUCTOR_MEMORY_ARTIFACT))
            stack.enter_context(_compat.trace.trace_handler(self.recorder))
            stack.enter_context(_compat.cudagraphs.cudagraph_skip_log(self.recorder.cudagraph_skip))
            if self.cudagraph_steps:
                self.recorder.partition_log = stack.enter_context(
                    _compat.cudagraphs.cudagraph_partition_log(self.recorder.cudagraph_recording))
            try:
                yield
            finally:
                self.seconds = time.perf_counter() - start
                self.side_table = _compat.dynamo.user_kernel_table()  # reset_dynamo() clears it
                _compat.dynamo.reset_dynamo()
                self.recorder.close()

    def compile_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"backend": self.backend, "fullgraph": self.options.fullgraph}
        if self.options.mode:
            kw["mode"] = self.options.mode
        if self.options.dynamic:
            kw["dynamic"] = {"true": True, "false": False}[self.options.dynamic]
        return kw

    def step(self, fn: Callable[..., Any], inputs: modelfile.Call) -> Any:
        """Call ``fn`` (compiled or eager) and, when asked and possible, run backward; its outputs."""
        if self.cudagraph_steps:
            # a training loop under CUDA graphs starts each step and clears the gradients (zero_grad): a
            # gradient left from the last step would be a CUDA graph output the next replay overwrites
            _compat.cudagraphs.cudagraph_step_begin()
            params = getattr(fn, "parameters", None)
            for p in (params() if callable(params) else ()):
                p.grad = None
        out = inputs(fn)
        if self.options.backward:
            loss = outputs.scalar_loss(out)
            if loss is not None:
                loss.backward()
        return out

    def call(self, model: Callable[..., Any], compiled: Callable[..., Any], inputs: modelfile.Call,
             where: Path | None, index: int = 0) -> bool:
        """Run call ``index`` (0: example_inputs, k: input_sets[k - 1]) and its backward.

        False if a compiler stage failed. An input set (index > 0) that raises as the model's own
        error is recorded against that set, and the others still run.
        """
        self.recorder.call = index
        self.calls += 1
        self.recorder.add_call_shapes(index, shapespec.call_shapes(model, inputs.args))
        try:
            out = modelfile.no_exit(self.step, compiled, inputs)
            if index == 0 and self.verification is None and self.reference is not None:
                self.verification = verify.compare(self.reference, out, inputs, model,
                                                   self.options.verify_request or VerifyRequest())
            return True
        except Exception as exc:  # noqa: BLE001 - classified below, never swallowed silently
            if not _compat.exceptions.is_compiler_exception(exc):
                if where is not None and modelfile.raised_at_def_line(exc, where):
                    # Dynamo re-raises an error it met while tracing from the frame's entry (the `def`
                    # line): run eagerly once to name the line that raised
                    try:
                        modelfile.no_exit(self.step, model, inputs)
                    except Exception as eager_exc:  # noqa: BLE001
                        exc = eager_exc
                return self._model_error(exc, where, index)
            # Dynamo also fails when the model itself is broken (it runs the ops on fake tensors
            # first): only an error eager mode does not reproduce is a compiler failure.
            try:
                modelfile.no_exit(self.step, model, inputs)
            except Exception as eager_exc:  # noqa: BLE001
                return self._model_error(eager_exc, where, index)
            self.failure = failure_of(exc, self.custom_backend or "")
            return False

    def per_call(self, compiled: Callable[..., Any], sets: Sequence[modelfile.Call]) -> None:
        """Time calls of the compiled model over the input sets that ran (capturing/percall.py)."""
        from tcinspect.capturing import percall

        raised = {e.input_set for e in self.input_errors}
        calls = [(i, args) for i, args in enumerate(sets) if i not in raised]
        failed = (f"not measured: the {self.failure.stage} stage failed" if self.failure is not None else "")
        self.recorder.call = -1  # a compile during the timed calls belongs to no input set
        # forward only, in the grad mode the capture's calls ran in (a different one would fail a guard)
        record = percall.measured_or_why(
            compiled, calls, self.options.per_call,
            lambda: [e.compile_id for e in self.recorder.events if e.name == "compilation_metrics"], failed)
        percall.log(record)

    def record_counters(self) -> None:
        """Log Dynamo's run counters as the capture's own calls end (before any timed or measured call)."""
        now, before = _compat.dynamo.dynamo_counters(), self.counters_before
        ran = {group: {k: v - before[group].get(k, 0) for k, v in now[group].items()} for group in ("stats", "frames")}
        ran["graph_break"] = now["graph_break"] - before["graph_break"]
        self.recorder.add_artifact(ev_mod.COUNTERS_ARTIFACT, json.dumps(ran), call=-1)

    def runtime_coverage(self, model: Any, compiled: Callable[..., Any], inputs: modelfile.Call, device: str) -> None:
        """Log which ATen ops one more call of the compiled model runs compiled and which eagerly
        (capturing/runtime_coverage.py)."""
        from tcinspect.capturing import runtime_coverage

        if self.cudagraph_steps:
            # one more call would replay or record CUDA graphs again: a recording changes the tree torch keeps
            self.recorder.add_artifact(ev_mod.RUNTIME_COVERAGE_ARTIFACT, json.dumps({"not_measured": (
                "under a CUDA-graph mode one more call would record CUDA graphs again (the cudagraphs section counts "
                "what ran in them)")}), call=-1)
            return
        self.recorder.call = -1  # the measured call belongs to no input set
        self.recorder.paused = True  # what torch logs while it runs (a CUDA graph replay, ...) is not the run's
        try:
            record = runtime_coverage.measure(compiled, inputs, self.step, model=model, device=device)
        finally:
            self.recorder.paused = False
        self.recorder.add_artifact(ev_mod.RUNTIME_COVERAGE_ARTIFACT, json.dumps(record), call=-1)

    def script_call(self) -> None:
        """A script called into what it compiled: the events that follow belong to this call."""
        self.recorder.call = self.calls
        self.calls += 1

    def _model_error(self, exc: BaseException, where: Optional[Path], index: int) -> bool:
        """The model's own error: fatal for example_inputs, recorded against an input set otherwise."""
        err = modelfile.model_raised(exc, where)
        if index == 0:
            raise err from exc
        self.input_errors.append(InputSetError(index, err.cause))
        return True

    def report(self, target: Target, device: str) -> Report:
        events = self.recorder.events
        # record_s: the handler, inside capture_s; assemble_s: events -> stages (bench/README.md)
        return report_from_events(
            events, target=target, options=self.options, device=device, torch_version=_compat.version.torch_version(),
            failure=self.failure,
            side_table=self.side_table, verification=self.verification, calls=self.calls, input_errors=self.input_errors,
            timings=(("capture_s", round(self.seconds, 3)), ("record_s", round(self.recorder.seconds, 4))))


def capture_loaded(loaded: modelfile.LoadedModel, target: Target, opts: Options, fresh: bool,
                    where: Optional[Path], quiet: bool = False, source: Optional[modelfile.ModelSource] = None) -> Report:
    if not opts.device and loaded.device:
        opts = replace(opts, device=loaded.device)
    check_device(opts.device)
    model = loaded.model
    inputs, *sets = loaded.calls()
    if opts.device:
        if hasattr(model, "to") and callable(model.to):
            model = model.to(opts.device)
        inputs = modelfile.move(inputs, opts.device)
        sets = [modelfile.move(s, opts.device) for s in sets]
    device = opts.device or device_of(model, inputs)
    bench = opts.bench_request
    if bench is not None:
        gpu_timing.check(opts.compile, device=device)
    if opts.export_request is not None:  # torch.export instead of torch.compile
        from tcinspect.capturing import export as exporting

        return exporting.run(model, inputs, opts, target, device, where, quiet, source)
    run = Run(opts, fresh, quiet)
    run.recorder.module_names = _compat.provenance.module_names(model)
    if opts.verify_request is not None:
        run.reference = verify.reference(model, inputs, run.step, where)
    run.cudagraph_steps = opts.mode in cudagraphs.CUDAGRAPH_MODES and device.startswith("cuda")
    # CUDA graph trees warm a function up on its first call and record it on the next: under a CUDA-graph
    # mode each call is made CUDAGRAPH_CALLS times in a row, as a loop over these inputs would make it
    repeat = CUDAGRAPH_CALLS if run.cudagraph_steps else 1
    with run.recording():
        compiled = _compat.dynamo.compile_fn(model, **run.compile_kwargs())
        for index, args in enumerate([inputs, *sets]):
            if not all(run.call(model, compiled, args, where, index) for _ in range(repeat)):
                break
        run.record_counters()
        if run.failure is None:  # which ATen ops one more call runs compiled, which eagerly (after the record)
            run.runtime_coverage(model, compiled, inputs, device)
        if opts.per_call:  # guards --per-call: time calls of the compiled model, now that it compiled
            run.per_call(compiled, [inputs, *sets])
        # --bench: while the compiled frames are alive, time one more call's kernels
        measured = (gpu_timing.measure(model, compiled, inputs, run.step, opts.compile, bench)
                    if bench is not None and run.failure is None else None)
        peaks = memory.measure(model, compiled, inputs, run, device) if run.failure is None else None
    if measured is not None and bench is not None and bench.try_mode:
        # after the recording: the other mode's compile is no part of this report
        gpu_timing.try_mode(measured, model, inputs, run.step, opts.compile, bench.try_mode)
    return memory.attach(roofline.attach(run.report(target, device), measured), peaks, device, opts)
