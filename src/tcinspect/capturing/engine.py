"""Run torch.compile once and record every stage through the structured trace: the entry points.

``capture`` (a model and its inputs, in-process) and ``capture_file`` (a model file, or a script run as ``__main__``;
a ``Request`` is unpacked here and nowhere else) turn what they are given into the calls to make and the report's
record of options. recording.py records the compile (of a loaded model, or of a script's own torch.compile calls),
with recorder.py's handler on torch's trace.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Optional

from tcinspect.capturing import _compat, custom, gpu_timing, modelfile, recording
from tcinspect.errors import ModelFileError, ModelRaisedError, UsageError
from tcinspect.parse import events as ev_mod
from tcinspect.report import (
    BenchRequest,
    CompileOptions,
    ExportRequest,
    Options,
    Report,
    Request,
    Target,
    VerifyRequest,
)


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
    return recording.capture_loaded(loaded, target, request.options, fresh, None, quiet)


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
    with modelfile.isolated(src.path, None):
        try:
            loaded = modelfile.load(src, model_name, inputs_name, opts.device)
            target = Target(kind="model", path=str(path), sha256=src.sha256, model_name=model_name,
                            inputs_name=inputs_name, input_sets=len(loaded.input_sets))
            rep = recording.capture_loaded(loaded, target, opts, fresh, src.path, quiet, src)
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
    recording.check_device(opts.device)
    why = "--script" if forced else f"it defines no `{model_name}` at module level"
    if opts.passes or opts.verify_request or opts.export_request or custom.is_target(opts.backend):
        raise UsageError(f"{src.path} is run as a script ({why}), whose own torch.compile "
                         "calls keep their options", "define `model` and `example_inputs` to use --backend "
                         "module:callable, --pass, verify or export")
    if opts.per_call:
        raise UsageError(f"{src.path} is run as a script ({why}): --per-call times calls of a model it cannot "
                         "repeat", "define `model` and `example_inputs`, or leave out --per-call")
    run = recording.Run(opts, fresh, quiet)
    with (modelfile.isolated(src.path, [str(src.path), *args]), run.recording(),
          _compat.dynamo.counting_compiled_calls(run.script_call)):
        try:
            modelfile.execute(src, "__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ModelRaisedError(f"{src.path}: the script exited with status {exc.code!r}",
                                       "fix the script, or give its arguments after `--`") from None
        except Exception as exc:
            if _compat.exceptions.is_compiler_exception(exc):
                run.failure = recording.failure_of(exc)
            else:
                raise modelfile.script_frame_error(exc, src.path) from exc
        finally:
            run.record_counters()
    if all(e.name == ev_mod.COUNTERS_ARTIFACT for e in run.recorder.events):
        raise ModelFileError(f"{src.path} was run as a script ({why}) and compiled nothing",
                             f"define `{model_name}` and `example_inputs`, or call torch.compile in the script")
    target = Target(kind="script", path=str(src.path), sha256=src.sha256)
    return run.report(target, opts.device or "cpu")
