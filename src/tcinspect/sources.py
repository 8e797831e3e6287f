"""Where a command's report comes from: a saved report, the cache, or a fresh capture."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from tcinspect import cache, serialize
from tcinspect.errors import ModelFileError, ReportFormatError, StageFailedError, UsageError, UserTargetFailedError
from tcinspect.report import USER_TARGET_PREFIXES, Options, Report

REPORT_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Resolved:
    report: Report
    #: "" when freshly captured; else where the report came from, for a line on stderr.
    note: str = ""


def is_report_path(file: str) -> bool:
    return file.lower().endswith(REPORT_SUFFIXES)


def resolve(
    file: Optional[str],
    options: Options,
    *,
    model_name: str = "model",
    inputs_name: str = "example_inputs",
    fresh: bool = False,
    script_args: Sequence[str] = (),
    also_accept: Sequence[Options] = (),
    quiet: bool = False,
    timeout: Optional[float] = None,
    nproc: Optional[int] = None,
    launcher_args: Sequence[str] = (),
    isolate: bool = False,
) -> Resolved:
    """The report for ``file``: a saved report, a current cached one, or a new capture.

    ``also_accept`` lists other capture options whose cached reports answer too (a full
    Inductor trace answers `breaks`, which itself needs only Dynamo). ``nproc`` runs the file on
    that many ranks under torchrun (tcinspect.distributed); ``timeout`` then bounds the whole job.
    ``isolate`` compiles in a child process even without ``timeout`` (a native crash is then a report).
    """
    if launcher_args and nproc is None:
        raise UsageError("--torchrun-arg passes options to torchrun, which only --nproc starts", "add --nproc N")
    if nproc is not None and (file is None or is_report_path(file)):
        raise UsageError("--nproc runs a model file on several ranks, so it needs a .py file",
                         "give the model file or script, e.g. tcinspect trace train.py --nproc 2")
    if script_args and (file is None or is_report_path(file)):
        raise UsageError(f"unexpected argument '{script_args[0]}': only a script takes arguments",
                         "remove it (one FILE per command)")
    if file is None:
        entry = cache.latest()
        if entry is None:
            raise ReportFormatError(f"no FILE given and no earlier trace in {cache.cache_dir()}/",
                                    "run `tcinspect trace model.py` first, or give a model file or a saved report")
        return Resolved(entry.report, entry.describe())
    if is_report_path(file):
        return Resolved(serialize.load(file), f"from saved report {file}")

    path = Path(file)
    if not path.is_file():
        # let the model-file reader produce its precise error (missing, directory, ...)
        from tcinspect.recording import modelfile

        modelfile.read(path, model_name)
        raise ModelFileError(f"'{path}' is not a regular file", "give a .py model file")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    if script_args:
        from tcinspect.recording import modelfile

        if not modelfile.read(path, model_name).is_script:
            raise UsageError(f"unexpected argument '{script_args[0]}': {file} is a model file (it defines "
                             f"`{model_name}`), which takes no arguments",
                             "remove it; only a script (a file without `model`) takes arguments after --")
    extra = (model_name, inputs_name, *script_args)
    if nproc is not None:  # a distributed report is its own entry, per rank count and torchrun options
        extra = (*extra, f"--nproc={nproc}", *launcher_args)
    keys = [cache.key(path, sha, o, extra) for o in (options, *also_accept)]
    # a custom backend or pass lives in another file, whose changes the key would not see
    cacheable = not options.passes and ":" not in options.backend
    if not fresh and cacheable:
        entry = cache.lookup(path, keys)
        if entry is not None:
            return Resolved(entry.report, f"reusing the current report of {file} ({entry.describe()}; --fresh to recompile)")

    if nproc is not None:
        from tcinspect import distributed

        # raises, with the merged report, when a rank failed
        report = distributed.capture(path, nproc=nproc, launcher_args=launcher_args, model_name=model_name,
                                     inputs_name=inputs_name, options=options, fresh=fresh,
                                     script_args=script_args, quiet=quiet, timeout=timeout)
    elif timeout is not None or isolate:
        from tcinspect.recording.isolate import capture_isolated  # the child imports torch, not us

        report = capture_isolated(path, model_name=model_name, inputs_name=inputs_name, options=options,
                                  fresh=fresh, script_args=script_args, quiet=quiet, timeout=timeout)
    else:
        from tcinspect.recording.engine import capture_file  # torch is imported only here

        report = capture_file(path, model_name=model_name, inputs_name=inputs_name, options=options, fresh=fresh,
                              script_args=script_args, quiet=quiet)
    if not report.ok:
        if report.error.startswith(USER_TARGET_PREFIXES):
            raise UserTargetFailedError(report.error, "fix that target (--debug for its traceback); the report shows what ran before it", report)
        raise StageFailedError(report.error, "the report shows the stages that worked; --debug for details", report)
    if cacheable:
        cache.store(path, keys[0], report)
    return Resolved(report)
