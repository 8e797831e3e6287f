"""``breaks --try-fixes``: one trial capture per torch._dynamo.config setting, each in a child process of its own.

A trial is the report's own capture again (its recorded compile options) with one more ``dynamo_config`` setting,
run as ``verify`` runs (eager side by side, outputs and gradients compared), isolated as ``--timeout`` isolates
(isolate.capture_isolated: the setting is applied in the child alone, and a crash or a hang is one error), cold
in a private Inductor cache (``fresh``), and never stored in the report cache: the user's process, caches and
files are as they were before it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tcinspect.errors import UsageError
from tcinspect.report import Options, Report, Request, VerifyRequest


def trial_request(request: Request, recorded: Options, setting: str) -> Request:
    """The capture of one trial: ``recorded`` (the options of the report under trial) plus ``setting``, verified
    against eager, fresh, isolated, and nothing else of the request's extras (bench, export, per-call timing)."""
    compile = replace(recorded.compile, dynamo_config=(*recorded.compile.dynamo_config, setting))
    return replace(request, compile=compile, verify=VerifyRequest(recorded.rtol, recorded.atol), export=None,
                   bench=None, fresh=True, isolate=True, nproc=None, launcher_args=(), rank=None, per_call=0,
                   measure_memory=False, also_accept=())


def run(request: Request, before: Report, setting: str) -> Report:
    """``before``'s model file captured again with ``setting`` (``name=value``) in a child process: the trial's
    report (a crash or a timeout is a report with its failure). Raises the child's TcinspectError (the model
    raised, DynamoConfigError: this torch has no such config)."""
    from tcinspect.capturing import modelfile
    from tcinspect.capturing.isolate import capture_isolated

    assert request.file is not None  # request.check_try_fixes has refused all but a model file
    source = modelfile.read(Path(request.file), request.model, request.as_script)
    if before.target.sha256 and source.sha256 != before.target.sha256:
        raise UsageError(f"{request.file} changed since the report under trial was made",
                         "run `tcinspect breaks --try-fixes` again on the file as it is now")
    return capture_isolated(trial_request(request, before.options, setting), source)
