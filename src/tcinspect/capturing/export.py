"""``torch.export.export`` in strict and non-strict mode, and optionally AOTInductor, as report parts."""

from __future__ import annotations

import dataclasses
import linecache
import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Optional

from tcinspect._version import __version__
from tcinspect.capturing import _compat, outputs, verify
from tcinspect.capturing.modelfile import Call, ModelSource
from tcinspect.parse.fxgraph import parse_graph
from tcinspect.report import (
    NOT_RUN,
    AotiRun,
    AotStage,
    DynamoStage,
    ExportRun,
    ExportSignature,
    InductorStage,
    Options,
    Report,
    SourceLocation,
    Stages,
    Target,
    VerifyRequest,
    options_from_json,
)

MODES = ("strict", "non-strict")
_NOT_COMPILED = "not run: `tcinspect export` runs torch.export, not torch.compile"
_USER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')


def _as_module(model: Any) -> Any:
    """torch.export takes an nn.Module; a plain function is wrapped in one."""
    import torch

    if isinstance(model, torch.nn.Module):
        return model

    class Wrapped(torch.nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return model(*args, **kwargs)

    return Wrapped()


def dynamic_shapes_for(inputs: Call, dims: tuple[int, ...], module: Any = None) -> Optional[Any]:
    """One ``Dim`` per listed dimension, shared by every tensor input that has it (a batch dimension).

    Positional inputs alone give a tuple; with keyword inputs, a dict by the names ``module.forward``
    binds them to, the form torch.export matches against its own binding of args and kwargs.
    """
    import inspect

    import torch
    from torch.export import Dim

    if not dims:
        return None
    shared = {d: Dim("batch" if d == 0 else f"dim{d}") for d in dims}

    def spec(t: Any) -> Any:
        return {d: shared[d] for d in dims if d < t.dim()} if isinstance(t, torch.Tensor) else None

    if not inputs.kwargs:
        return tuple(spec(t) for t in inputs.args)
    params = inspect.signature(module.forward).parameters
    bound = inspect.signature(module.forward).bind(*inputs.args, **inputs.kwargs).arguments
    out: dict[str, Any] = {}
    for name, value in bound.items():
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out[name] = tuple(spec(t) for t in value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out[name] = {k: spec(t) for k, t in value.items()}
        else:
            out[name] = spec(value)
    return out


def _spec_text(inputs: Call, dims: tuple[int, ...]) -> str:
    if not dims:
        return ""
    return ", ".join(f"{name}: {{{', '.join(f'{d}: batch' if d == 0 else f'{d}: dim{d}' for d in dims)}}}"
                     for name, t in inputs.named() if hasattr(t, "dim"))


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".strip().rstrip(":")


def _user_frame(exc: BaseException, where: Optional[Path]) -> Optional[SourceLocation]:
    """The model file's line the failure points at: from the traceback, else from Dynamo's message."""
    if where is None:
        return None
    target = str(where.resolve())
    found = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if str(Path(fr.filename).resolve()) == target:
            found = SourceLocation(str(where), fr.lineno or 0, fr.name, (fr.line or "").strip())
    if found is None:
        for m in _USER_FRAME.finditer(str(exc)):
            if Path(m["file"]).name == where.name:
                code = linecache.getline(str(where), int(m["line"])).strip()
                found = SourceLocation(str(where), int(m["line"]), m["fn"], code)
    return found


def _signature(ep: Any) -> ExportSignature:
    from torch.export.graph_signature import InputKind

    groups: dict[Any, list[str]] = {}
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", str(spec.arg))
        groups.setdefault(spec.kind, []).append(name if spec.kind == InputKind.USER_INPUT else f"{name} <- {spec.target}")
    outputs = [getattr(s.arg, "name", str(s.arg)) + ("" if s.kind.name == "USER_OUTPUT" else f" ({s.kind.name.lower()})")
               for s in ep.graph_signature.output_specs]
    return ExportSignature(
        user_inputs=tuple(groups.get(InputKind.USER_INPUT, ())),
        parameters=tuple(groups.get(InputKind.PARAMETER, ())),
        buffers=tuple(groups.get(InputKind.BUFFER, ())),
        constants=tuple(groups.get(InputKind.CONSTANT_TENSOR, []) + groups.get(InputKind.CUSTOM_OBJ, [])),
        user_outputs=tuple(outputs),
    )


def _aoti(ep: Any, module: Any, inputs: Call, mode: str, options: Options) -> AotiRun:
    import torch

    with tempfile.TemporaryDirectory(prefix="tcinspect-aoti-") as tmp:
        package = Path(tmp) / f"model-{mode}.pt2"
        try:
            _compat.backends.aoti_compile_and_package(ep, str(package))
            runner = _compat.backends.aoti_load_package(str(package))
            with torch.no_grad():
                got = inputs(runner)
                expected = inputs(module)
        except Exception as exc:  # noqa: BLE001 - reported per mode, like an export failure
            return AotiRun(False, package.name, error=_one_line(exc))
    got_flat, want_flat = outputs.named_tensors(got), outputs.named_tensors(expected)
    if len(got_flat) != len(want_flat):
        return AotiRun(False, package.name, error=f"the package returned {len(got_flat)} tensors, eager {len(want_flat)}")
    # the dtype tolerances, as verify uses them (export takes no --rtol/--atol)
    request = VerifyRequest(options.rtol, options.atol)
    checks = [verify.check(n, g, w, request) for (n, g), (_, w) in zip(got_flat, want_flat)]
    bad = next((c for c in checks if not c.ok), None)
    return AotiRun(bad is None, package.name, max((c.max_abs_error for c in checks), default=0.0),
                   error=f"{bad.name} differs from eager: {bad.message}" if bad else "")


def _aoti_isolated(target: Target, mode: str, options: Options, source: ModelSource) -> AotiRun:
    """AOTInductor in a child process: a crash there (seen: a segfault packaging a user Triton kernel
    on torch 2.11) becomes this mode's failure instead of ending tcinspect. The child loads the model file's
    text as this process read it (``source``), never the path again."""
    import json
    import signal
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="tcinspect-aoti-") as tmp:
        request, result = Path(tmp) / "request.json", Path(tmp) / "result.json"
        text = Path(tmp) / "source.py"
        text.write_bytes(source.text.encode("utf-8"))
        request.write_text(json.dumps({
            "path": target.path, "source": str(text), "model_name": target.model_name, "inputs_name": target.inputs_name,
            "mode": mode, "options": {k: (list(v) if isinstance(v, tuple) else v)
                                      for k, v in dataclasses.asdict(options).items()},
            "result": str(result)}))
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "tcinspect.capturing.export", str(request)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        package = f"model-{mode}.pt2"
        if result.is_file():
            data = json.loads(result.read_text())
            return AotiRun(bool(data["ok"]), package, float(data.get("max_abs_error", 0.0)), str(data.get("error", "")))
    if proc.returncode < 0:
        why = f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        why = f"exit status {proc.returncode}"
    return AotiRun(False, package, error=f"AOTInductor crashed its process ({why}){_crash_site(proc.stdout)}")


def _crash_site(output: str) -> str:
    """Where faulthandler saw the crash: the innermost Python frame of the crashing thread."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "most recent call first" in line:
            for frame in lines[i + 1:]:
                m = _USER_FRAME.search(frame.replace(" in ", ", in ", 1)) or re.search(
                    r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)', frame)
                if m:
                    return f" in {m['fn']} ({Path(m['file']).name}:{m['line']})"
            break
    return ""


def _aoti_child(request_path: str) -> int:
    """The child's side: load the model file, export it, package it with AOTInductor, compare with eager."""
    import json

    from tcinspect.capturing import modelfile

    req = json.loads(Path(request_path).read_text())
    options = options_from_json(req["options"])
    # the bytes the parent read (the file may have changed or gone since), under the file's own path
    src = modelfile.of_bytes(Path(req["path"]), Path(req["source"]).read_bytes(), req["model_name"], False)
    sys.path.insert(0, str(src.path.resolve().parent))
    loaded = modelfile.load(src, req["model_name"], req["inputs_name"], options.device)
    device = options.device or loaded.device
    model, inputs = loaded.model, loaded.calls()[0]
    if device:
        model = model.to(device) if hasattr(model, "to") else model
        inputs = modelfile.move(inputs, device)
    import torch

    module = _as_module(model)
    try:
        ep = torch.export.export(module, inputs.args, inputs.kwargs or None,
                                 dynamic_shapes=dynamic_shapes_for(inputs, options.dynamic_dims, module),
                                 strict=(req["mode"] == "strict"))
        run = _aoti(ep, module, inputs, req["mode"], options)
    except Exception as exc:  # noqa: BLE001
        run = AotiRun(False, error=_one_line(exc))
    Path(req["result"]).write_text(json.dumps(dataclasses.asdict(run)))
    return 0


def export_one(model: Any, inputs: Call, mode: str, options: Options, where: Optional[Path],
               target: Optional[Target] = None, source: Optional[ModelSource] = None) -> ExportRun:
    """One torch.export.export call, its graph and signature, or why it failed."""
    import torch

    module = _as_module(model)
    spec = _spec_text(inputs, options.dynamic_dims)
    try:
        shapes = dynamic_shapes_for(inputs, options.dynamic_dims, module)
        ep = torch.export.export(module, inputs.args, inputs.kwargs or None, dynamic_shapes=shapes,
                                 strict=(mode == "strict"))
    except Exception as exc:  # noqa: BLE001 - the failure is the answer for this mode
        return ExportRun(mode, False, _one_line(exc), _user_frame(exc, where), dynamic_shapes=spec)
    finally:
        _compat.dynamo.reset_dynamo()
    code = ep.graph_module.print_readable(print_output=False, include_stride=True, include_device=True)
    graph = parse_graph("exported_program", "\n".join(ln.rstrip() for ln in code.strip("\n").splitlines()) + "\n")
    aoti = None
    if options.aoti:
        if target is not None and target.kind == "model" and source is not None:  # isolated
            aoti = _aoti_isolated(target, mode, options, source)
        else:
            aoti = _aoti(ep, module, inputs, mode, options)
    return ExportRun(mode, True, graph=graph, signature=_signature(ep), dynamic_shapes=spec, aoti=aoti)


def run(model: Any, inputs: Call, options: Options, target: Target, device: str, where: Optional[Path],
        quiet: bool, source: Optional[ModelSource] = None) -> Report:
    """Every requested export mode as one report (the torch.compile stages are marked not run)."""
    import contextlib

    for mode in options.export:
        if mode not in MODES:
            from tcinspect.errors import UsageError

            raise UsageError(f"unknown export mode '{mode}'", "use strict or non-strict")
    with contextlib.ExitStack() as stack:
        if quiet:
            stack.enter_context(_compat.trace.quiet_torch_logs())
        _compat.dynamo.reset_dynamo()
        runs = tuple(export_one(model, inputs, mode, options, where, target, source) for mode in options.export)
    stages = Stages(DynamoStage(NOT_RUN, _NOT_COMPILED), AotStage(NOT_RUN, _NOT_COMPILED),
                    InductorStage(NOT_RUN, _NOT_COMPILED))
    return Report(torch_version=_compat.version.torch_version(), device=device, target=target, options=options,
                  stages=stages, exports=runs, tcinspect_version=__version__)


if __name__ == "__main__":
    sys.exit(_aoti_child(sys.argv[1]))
