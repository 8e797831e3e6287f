"""Run torch.compile once and record every stage through the structured trace."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from tcinspect.capturing import _compat, custom, gpu_timing, memory, modelfile, outputs, records, shapespec, verify
from tcinspect.errors import DeviceError, ModelFileError, ModelRaisedError, UsageError
from tcinspect.parse import assemble, cudagraphs, inductor, provenance, roofline, shapes
from tcinspect.parse import events as ev_mod
from tcinspect.parse import memory as memory_mod
from tcinspect.parse.fromevents import report_from_events
from tcinspect.parse.fxgraph import parse_graph
from tcinspect.report import (
    BenchRequest,
    CompileOptions,
    ExportRequest,
    InputSetError,
    Options,
    Report,
    Request,
    Target,
    Verification,
    VerifyRequest,
)

#: Set by the parent of an isolated capture (--timeout): where the child streams its events.
EVENTS_FILE_ENV = "TCINSPECT_EVENTS_FILE"
#: Calls made of each input set under a CUDA-graph mode on a GPU: a warm-up, a recording, a replay.
CUDAGRAPH_CALLS = 3


class Recorder(logging.Handler):
    """A logging handler that keeps every structured-trace event of interest, in order."""

    def __init__(self, stream: Optional[str] = None) -> None:
        super().__init__(level=logging.DEBUG)
        self.events: list[ev_mod.Event] = []
        self.call = -1  # which model call is running (set by the capture loop)
        self.paused = False  # set while tcinspect makes a call of its own after the record
        # in an isolated child, every event is also appended to a file as it arrives, so that a
        # crash or a timeout still leaves the stages recorded before it
        self._stream = open(stream, "a", encoding="utf-8") if stream else None  # noqa: SIM115 - closed by close()
        self.seconds = 0.0  # spent in emit(): tcinspect's own share of the compile (Report.timings)
        self._wrapper = ""  # the last inductor_output_code, which provenance records are keyed by
        self._mapping = ""  # the last node-mapping artifact (its postToPre goes into the record)
        self._post_grad = ""  # the last post-grad graph (its node outline goes into the record)
        #: str(id(module)) -> its name in the user's model, so module paths start at the user's root
        self.module_names: dict[str, str] = {}
        self._estimate = ""  # Inductor's last peak estimate, for the output code that follows it
        #: the output code modules Inductor wrote or loaded (tracked ones a miss wrote are removed after)
        self.output_code_files: list[str] = []
        #: tcinspect's records of what it saw compiled, in its own cache directory (never Inductor's)
        self._stores: dict[str, records.Store] = {}
        # resolved now: the model file may change the working directory, and the default is relative to it
        self._store_dirs = {kind: records.store_dir(kind) for kind in ("provenance", "memory", "partitions")}
        #: under a CUDA-graph mode on a GPU: torch's partition and recording debug logs
        #: (_compat.cudagraphs.PartitionLog)
        self.partition_log: Optional[_compat.cudagraphs.PartitionLog] = None

    def store(self, kind: records.Kind) -> records.Store:
        if kind not in self._stores:
            # Inductor's cache directory resolves when first needed (--fresh points it elsewhere first),
            # only to read records earlier versions left there
            self._stores[kind] = records.Store(kind, self._store_dirs[kind], _compat.caches.inductor_cache_dir())
        return self._stores[kind]

    def emit(self, record: logging.LogRecord) -> None:
        start = time.perf_counter()
        self._keep(record)
        self.seconds += time.perf_counter() - start

    def _keep(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        if ev_mod.event_name(metadata) in ev_mod.IGNORED:
            return
        event = ev_mod.from_record(metadata, getattr(record, "payload", None), self.call)
        if event.name in shapes.WITH_FRAMES:
            event = replace(event, meta=shapes.name_files(event.meta, _compat.trace.interned_files()))
        if event.name == "inductor_output_code":
            self._estimates(event)
        self._add(event)
        if event.name == "inductor_output_code":
            self._partitions(event)
            self._wrapper = event.payload
            path = event.meta.get("file_path") if isinstance(event.meta, dict) else None
            if isinstance(path, str) and path:
                self.output_code_files.append(path)
        elif event.name == "inductor_post_grad_graph":
            self._post_grad = event.payload
        elif event.name == provenance.NODE_MAPPINGS:
            self._mapping = event.payload
        elif event.name == provenance.STACK_TRACES:
            self._provenance(event)
        elif event.name == "aot_forward_graph":
            self._saved_modules(event)
        elif event.name == ev_mod.INDUCTOR_MEMORY_ARTIFACT:
            self._estimate = event.payload

    def add_call_shapes(self, call: int, shapes_of_call: list[dict[str, Any]]) -> None:
        """tcinspect's record of one model call's tensor input shapes (the shapes view's observed inputs)."""
        if shapes_of_call:
            self._add(ev_mod.Event(name=ev_mod.CALL_SHAPES_ARTIFACT, meta={"name": ev_mod.CALL_SHAPES_ARTIFACT},
                                   payload=json.dumps(shapes_of_call), call=call))

    def add_artifact(self, name: str, payload: str, call: int) -> None:
        """Log one of tcinspect's own JSON artifacts on the trace (parse/events.py names them)."""
        self._add(ev_mod.Event(name=name, meta={"name": name, "encoding": "json"}, payload=payload, call=call))

    def _add(self, event: ev_mod.Event) -> None:
        if self.paused:  # a call made after the record (runtime coverage's): what it logs is no part of the run
            return
        self.events.append(event)
        if self._stream is not None:
            self._stream.write(ev_mod.to_json_line(event))
            self._stream.flush()

    def _provenance(self, after: ev_mod.Event) -> None:
        """Log tcinspect's record of the graph whose provenance artifacts Inductor just logged."""
        where, record = _compat.provenance.provenance_snapshot(self.module_names)
        store = self.store("provenance")
        if where == "compile":
            stacks = provenance.json_dict(after.payload)
            if stacks:
                record["stacks"] = stacks
            pre = provenance.json_dict(self._mapping).get("postToPre")
            if isinstance(pre, dict) and pre:
                record["post_to_pre"] = pre
            record["launches"] = [[k.name, k.provenance_key] for k in inductor.parse_output_code(self._wrapper)]
            if self._post_grad:
                record["post_grad"] = provenance.outline(parse_graph("inductor_post_grad_graph", self._post_grad))
            store.remember(self._wrapper, record)
        elif where == "cache_hit":
            record = store.recall(self._wrapper) or {}
        if record:
            self._add(replace(after, name=provenance.OWN, meta={"name": provenance.OWN, "encoding": "json"},
                              payload=json.dumps(record)))

    def _partitions(self, output: ev_mod.Event) -> None:
        """Log the partitions torch's scheduler logged for the graph whose output code was just logged (under a
        CUDA-graph mode), kept by that code: an FX graph cache hit, which schedules nothing, finds them there."""
        if self.partition_log is None:
            return
        record = self.partition_log.take()
        store = self.store("partitions")
        if record is not None:
            store.remember(output.payload, record)
        elif cudagraphs.PARTITIONED in output.payload:
            record = store.recall(output.payload)
        if record:
            record = {**record, "compile_id": output.compile_id, "aot_id": inductor.aot_id_of(output.payload)}
            self._add(replace(output, name=cudagraphs.PARTITIONS_ARTIFACT, payload=json.dumps(record),
                              meta={"name": cudagraphs.PARTITIONS_ARTIFACT, "encoding": "json"}))

    def cudagraph_recording(self, record: dict[str, Any]) -> None:
        """Log on the trace one CUDA graph recording torch logged on its cudagraphs debug log (parse/cudagraphs.py)."""
        frame, _, attempt = str(record.get("compile_id") or "").partition("/")
        self._add(ev_mod.Event(
            name=cudagraphs.RECORDING_ARTIFACT, frame_id=int(frame) if frame.isdigit() else None,
            frame_compile_id=int(attempt) if attempt.isdigit() else None,
            meta={"name": cudagraphs.RECORDING_ARTIFACT, "encoding": "json"}, payload=json.dumps(record),
            call=self.call))

    def cudagraph_skip(self, message: str, compile_id: str, part: str) -> None:
        """Log on the trace a CUDA graph skip torch logged only on its cudagraphs log (parse/cudagraphs.py)."""
        frame, _, attempt = compile_id.partition("/")
        self._add(ev_mod.Event(
            name=cudagraphs.SKIP_ARTIFACT, frame_id=int(frame) if frame.isdigit() else None,
            frame_compile_id=int(attempt) if attempt.isdigit() else None,
            meta={"name": cudagraphs.SKIP_ARTIFACT, "encoding": "json"},
            payload=json.dumps(cudagraphs.skip_record(message, compile_id, part)), call=self.call))

    def _memory_store(self) -> records.Store:
        return self.store("memory")

    def _saved_modules(self, graph: ev_mod.Event) -> None:
        """Log each forward node's module; kept by the graph's text, so an AOTAutograd cache hit (no graph
        module to read) logs the same record as the compile that filled the cache."""
        modules, note = _compat.provenance.saved_modules(self.module_names)
        store = self._memory_store()
        if not note:
            store.remember(graph.payload, {"modules": modules})
        else:
            kept = store.recall(graph.payload)
            if kept is not None and isinstance(kept.get("modules"), dict):
                modules, note = kept["modules"], ""
        self._add(replace(graph, name=ev_mod.SAVED_MODULES_ARTIFACT,
                          meta={"name": ev_mod.SAVED_MODULES_ARTIFACT, "encoding": "json"},
                          payload=memory_mod.modules_record(modules, note)))

    def _estimates(self, code: ev_mod.Event) -> None:
        """Keep Inductor's peak estimates by the output code they were made for; on an FX graph cache hit
        (no scheduling, no estimate) log the kept ones before the code, as a compile would."""
        store = self._memory_store()
        if self._estimate:
            store.remember(code.payload, {"estimate": self._estimate})
        else:
            kept = store.recall(code.payload)
            if kept is not None and isinstance(kept.get("estimate"), str):
                self._add(replace(code, name=ev_mod.INDUCTOR_MEMORY_ARTIFACT,
                                  meta={"name": ev_mod.INDUCTOR_MEMORY_ARTIFACT, "encoding": "json"},
                                  payload=kept["estimate"]))
        self._estimate = ""

    def close(self) -> None:
        for store in self._stores.values():
            store.prune()
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        super().close()


def _check_device(device: str) -> None:
    if device in ("", "cpu"):
        return
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError("--device cuda was asked for, but this machine has no CUDA GPU (torch.cuda.is_available() is False)",
                          "run on a GPU machine, or use --device cpu")
    if not device.startswith(("cuda", "cpu")):
        raise UsageError(f"unknown device '{device}'", "use --device cpu or --device cuda")


def _device_of(model: Any, inputs: modelfile.Call) -> str:
    import torch

    for value in inputs.values():
        if isinstance(value, torch.Tensor):
            return value.device.type
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device.type
    return "cpu"


@contextlib.contextmanager
def _isolated(path: Optional[Path], argv: Optional[list[str]]) -> Iterator[None]:
    """Restore cwd, sys.argv and sys.path after user code ran (it may change any of them), and forget
    the modules it imported from beside the model file: a later capture in this process (a library
    user's, a test's) imports them again, as edited since, and never compiles yesterday's code."""
    cwd = os.getcwd()
    old_argv = list(sys.argv)
    old_path = list(sys.path)
    home = str(path.resolve().parent) + os.sep if path is not None else ""
    # a module of the same name imported earlier from elsewhere (another project captured in this
    # process) would shadow the one beside this file: set it aside for the capture, put it back after
    shadowed = {}
    if home:
        for name, mod in list(sys.modules.items()):
            top = name.split(".")[0]
            if os.path.isdir(home + top) or os.path.isfile(home + top + ".py"):
                file = getattr(mod, "__file__", None) or ""
                if not os.path.realpath(file).startswith(home):
                    shadowed[name] = sys.modules.pop(name)
    old_modules = set(sys.modules)
    if path is not None:
        sys.path.insert(0, home.rstrip(os.sep))
    if argv is not None:
        sys.argv = argv
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.argv = old_argv
        sys.path[:] = old_path
        for name in set(sys.modules) - old_modules if home else ():
            file = getattr(sys.modules.get(name), "__file__", None) or ""
            if os.path.realpath(file).startswith(home):
                sys.modules.pop(name, None)
        for name, mod in shadowed.items():
            sys.modules.setdefault(name, mod)


def _failure(exc: BaseException, custom_backend: str = "") -> assemble.Failure:
    root = _compat.exceptions.compiler_error_root(exc)
    stage = _compat.exceptions.stage_of_exception(exc)
    if isinstance(root, custom.UserTargetError):
        return assemble.Failure(stage, str(root), blame=str(root), fix=root.fix, kind="user_target")
    if custom_backend and not _compat.exceptions.raised_in_torch(root):
        # the user's own backend raised (not torch code it called into): their bug, like a model that
        # raises; Dynamo's stage is where it called the backend
        msg = f"--backend '{custom_backend}' raised {modelfile.describe(root)}"
        return assemble.Failure("dynamo", msg, blame=msg, fix="fix the backend (--debug shows the traceback)",
                                kind="user_target")
    return assemble.Failure(stage, modelfile.describe(root))


class _Run:
    """One recorded compile: the handler, the caches and the failure, if any."""

    def __init__(self, options: Options, fresh: bool, quiet: bool = False) -> None:
        self.options = options
        self.fresh = fresh
        self.quiet = quiet
        self.recorder = Recorder(os.environ.get(EVENTS_FILE_ENV))
        self.failure: Optional[assemble.Failure] = None
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
            self.failure = _failure(exc, self.custom_backend or "")
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


def capture(model: Callable[..., Any], *inputs: Any, input_sets: Sequence[Any] = (),
            compile: Optional[CompileOptions] = None, verify: Optional[VerifyRequest] = None,
            export: Optional[ExportRequest] = None, bench: Optional[BenchRequest] = None, per_call: int = 0,
            measure_memory: bool = False, fresh: bool = False, quiet: bool = False,
            example_kwargs: Optional[dict[str, Any]] = None, options: Optional[Options] = None,
            **unknown: Any) -> Report:
    """Compile ``model`` once on ``inputs`` (then each of ``input_sets``) and return the report.

    Args:
        model: an ``nn.Module`` or any callable.
        *inputs: its positional arguments.
        input_sets: further argument tuples (with ``example_kwargs``: ``(args, kwargs)`` pairs), called in
            order after ``inputs`` (recompiles recorded).
        compile, verify, export, bench, per_call, measure_memory: what to run, as the ``Request`` fields of the
            same names (``CompileOptions``: backend, mode, fullgraph, dynamic, backward, device, passes).
        fresh: compile cold, in a private Inductor cache directory.
        quiet: silence torch's own log output while compiling.
        example_kwargs: the first call's keyword arguments.
        options: deprecated (the report's flat record ``Options``); use the parts above.
    """
    if unknown:  # a compile option given beside the model, as torch.compile takes it: name where it goes
        name = sorted(unknown)[0]
        if name in {f.name for f in dataclasses.fields(CompileOptions)}:
            raise UsageError(f"capture() takes no {name}=: it is a compile option",
                             f"pass compile=CompileOptions({name}={unknown[name]!r})")
        raise UsageError(f"capture() takes no {name}=", "pass compile=CompileOptions(...), verify=, export=, bench=, "
                         "per_call=, measure_memory=, input_sets=, example_kwargs=, fresh= or quiet=")
    parts: dict[str, Any] = {"compile": compile, "verify": verify, "export": export, "bench": bench,
                             "per_call": per_call, "measure_memory": measure_memory}
    if options is not None:
        parts = _parts_of(options, "tcinspect.capture(options=Options(...))", given=parts)
    request = Request(**{**parts, "compile": parts["compile"] or CompileOptions()}, fresh=fresh, quiet=quiet)
    target = Target(kind="callable", model_name=getattr(model, "__name__", type(model).__name__),
                    input_sets=len(input_sets))
    loaded = modelfile.LoadedModel(model, tuple(inputs), list(input_sets), example_kwargs=dict(example_kwargs or {}))
    if example_kwargs is not None:
        loaded.input_sets = [modelfile.Call((), dict(s)) if isinstance(s, dict) else modelfile.Call(s[0], dict(s[1]))
                             for s in input_sets]
    return _capture_loaded(loaded, target, request.options, fresh, None, quiet)


#: The Request fields the report's flat ``Options`` record holds, as the parts a capture is asked with.
_RECORDED_PARTS = ("compile", "verify", "export", "bench", "per_call", "measure_memory")


def _parts_of(options: Options, old: str, given: dict[str, Any]) -> dict[str, Any]:
    """The parts (compile, verify, export, bench, per_call, measure_memory) a deprecated ``Options`` stands for,
    with one warning naming the new spelling; giving both spellings is a mistake."""
    if not isinstance(options, Options):
        raise UsageError(f"options={options!r} is not an Options record",
                         "pass compile=CompileOptions(...) (and verify=, export=, bench=) instead")
    mixed = [k for k in _RECORDED_PARTS if given.get(k)]
    if mixed:
        raise UsageError(f"options= and {mixed[0]}= were both given", f"pass only {mixed[0]}= and the other parts")
    deprecated(f"{old} is deprecated and will be removed in the next release; use compile=CompileOptions(...) "
               "(and verify=, export=, bench=, per_call=, measure_memory=)")
    return {"compile": options.compile, "verify": options.verify_request, "export": options.export_request,
            "bench": options.bench_request, "per_call": options.per_call, "measure_memory": options.measure_memory}


def deprecated(message: str) -> None:
    """One DeprecationWarning, attributed to the caller's line outside tcinspect."""
    import warnings

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    level, frame = 1, sys._getframe(0)  # stacklevel N names the frame sys._getframe(N - 1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    warnings.warn(message, DeprecationWarning, stacklevel=level)


def _capture_loaded(loaded: modelfile.LoadedModel, target: Target, opts: Options, fresh: bool,
                    where: Optional[Path], quiet: bool = False, source: Optional[modelfile.ModelSource] = None) -> Report:
    if not opts.device and loaded.device:
        opts = replace(opts, device=loaded.device)
    _check_device(opts.device)
    model = loaded.model
    inputs, *sets = loaded.calls()
    if opts.device:
        if hasattr(model, "to") and callable(model.to):
            model = model.to(opts.device)
        inputs = modelfile.move(inputs, opts.device)
        sets = [modelfile.move(s, opts.device) for s in sets]
    device = opts.device or _device_of(model, inputs)
    bench = opts.bench_request
    if bench is not None:
        gpu_timing.check(opts.compile, device=device)
    if opts.export_request is not None:  # torch.export instead of torch.compile
        from tcinspect.capturing import export as exporting

        return exporting.run(model, inputs, opts, target, device, where, quiet, source)
    run = _Run(opts, fresh, quiet)
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


def capture_file(file: str | os.PathLike | Request, *, source: Optional[modelfile.ModelSource] = None,
                 options: Optional[Options] = None, as_script: Optional[bool] = None,
                 recorded: Optional[Callable[[Report], None]] = None, **fields: Any) -> Report:
    """Capture a model file (``model`` + ``example_inputs``) or, if it defines no model, a script.

    ``file`` is a ``Request`` (what ``tcinspect.obtain`` and the capture's child process pass), or a path with
    the ``Request`` fields as keyword arguments (``compile=CompileOptions(...)``, ``model_name``, ``script``,
    ``script_args``, ``fresh``, ``quiet``, ...). ``source`` is the file as already read and hashed (else it is
    read here). ``options`` and ``as_script`` are deprecated: use ``compile=`` (etc.) and ``script=True`` /
    ``model_name=``. ``recorded`` is given the report as recorded, before a verify mismatch is located
    (``VerifyRequest.locate_budget``; the isolated child keeps it, should --timeout end the search).
    """
    if isinstance(file, Request):
        if fields or options is not None or as_script is not None:
            raise UsageError("a Request carries its own options", "give them to the Request, not to capture_file")
        if file.file is None:
            raise UsageError("a capture needs a model file", "give Request(file=...) a .py model file or script")
        request = file
    else:
        unknown = sorted(set(fields) - _REQUEST_FIELDS)
        if unknown:
            raise UsageError(f"capture_file() takes no {unknown[0]}=",
                             f"pass Request fields: {', '.join(sorted(_REQUEST_FIELDS))}")
        if options is not None:
            fields = {**fields, **_parts_of(options, "capture_file(path, options=Options(...))", fields)}
        if as_script is not None:
            deprecated("capture_file(path, as_script=...) is deprecated and will be removed in the next release; "
                       "use script=True (script mode) or model_name=NAME (model mode)")
            if as_script:
                fields["script"] = True
            elif fields.get("model_name") is None:
                fields["model_name"] = "model"
        fields.setdefault("quiet", False)  # torch's log output as it was before capture_file took a Request
        request = Request(file=os.fspath(file), **fields)
    return _capture_file(request.file or "", request.model, request.inputs_name, request.options, request.fresh,
                         request.script_args, request.quiet, request.as_script, source, recorded)


#: What ``capture_file(path, ...)`` takes as keyword arguments: the Request's fields but the file.
_REQUEST_FIELDS = frozenset(f.name for f in dataclasses.fields(Request)) - {"file"}


def _capture_file(path: str | os.PathLike, model_name: str, inputs_name: str, opts: Options, fresh: bool,
                  script_args: Sequence[str], quiet: bool, as_script: Optional[bool],
                  source: Optional[modelfile.ModelSource],
                  recorded: Optional[Callable[[Report], None]] = None) -> Report:
    src = source or modelfile.read(path, model_name, as_script)
    if opts.bench_request is not None:  # before the file runs or anything compiles
        gpu_timing.check(opts.compile, script=src.is_script)
    if src.is_script:
        return _capture_script(src, opts, fresh, list(script_args), model_name, quiet, forced=bool(as_script))
    with _isolated(src.path, None):
        try:
            loaded = modelfile.load(src, model_name, inputs_name, opts.device)
            target = Target(kind="model", path=str(path), sha256=src.sha256, model_name=model_name,
                            inputs_name=inputs_name, input_sets=len(loaded.input_sets))
            rep = _capture_loaded(loaded, target, opts, fresh, src.path, quiet, src)
        finally:
            modelfile.unload(src)
        budget = opts.locate_budget
        v = rep.verification if budget is not None else None
        if budget is not None and v is not None and not v.ok:
            # after the record, in this process (an isolated child: --timeout bounds it): where results first depart
            from tcinspect.capturing import locate

            if recorded is not None:
                recorded(rep)
            print("tcinspect: verify: locating where compiled results first depart (--no-locate skips this)",
                  file=sys.stderr, flush=True)
            rep = locate.attach_file(rep, os.fspath(path), model_name, inputs_name, opts, budget, src)
        return rep


def _capture_script(src: modelfile.ModelSource, opts: Options, fresh: bool, args: list[str], model_name: str,
                    quiet: bool = False, forced: bool = False) -> Report:
    _check_device(opts.device)
    why = "--script" if forced else f"it defines no `{model_name}` at module level"
    if opts.passes or opts.verify_request or opts.export_request or custom.is_target(opts.backend):
        raise UsageError(f"{src.path} is run as a script ({why}), whose own torch.compile "
                         "calls keep their options", "define `model` and `example_inputs` to use --backend "
                         "module:callable, --pass, verify or export")
    if opts.per_call:
        raise UsageError(f"{src.path} is run as a script ({why}): --per-call times calls of a model it cannot "
                         "repeat", "define `model` and `example_inputs`, or leave out --per-call")
    run = _Run(opts, fresh, quiet)
    with _isolated(src.path, [str(src.path), *args]), run.recording(), \
            _compat.dynamo.counting_compiled_calls(run.script_call):
        try:
            modelfile.execute(src, "__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ModelRaisedError(f"{src.path}: the script exited with status {exc.code!r}",
                                       "fix the script, or give its arguments after `--`") from None
        except Exception as exc:
            if _compat.exceptions.is_compiler_exception(exc):
                run.failure = _failure(exc)
            else:
                raise modelfile.script_frame_error(exc, src.path) from exc
        finally:
            run.record_counters()
    if all(e.name == ev_mod.COUNTERS_ARTIFACT for e in run.recorder.events):
        raise ModelFileError(f"{src.path} was run as a script ({why}) and compiled nothing",
                             f"define `{model_name}` and `example_inputs`, or call torch.compile in the script")
    target = Target(kind="script", path=str(src.path), sha256=src.sha256)
    return run.report(target, opts.device or "cpu")
