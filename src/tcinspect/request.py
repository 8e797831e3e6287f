"""What a command asks the library for (``Request``), and where the report comes from (``obtain``): a saved
report, a TORCH_TRACE log, the cached report of an unchanged model file, or a new capture."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from tcinspect import cache, serialize
from tcinspect.errors import (
    DynamoConfigError,
    ModelFileError,
    ReportFormatError,
    TcinspectError,
    TraceLogError,
    UsageError,
)
from tcinspect.report import Failure, Options, Report, Request

if TYPE_CHECKING:
    from tcinspect.analysis.fixes import ConfigFix, FixTrial

__all__ = ["Obtained", "Request", "check_try_fixes", "load", "obtain", "obtained", "try_fix", "try_fixes"]

REPORT_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Obtained:
    report: Report
    #: "" when freshly captured; else where the report came from, for a line on stderr.
    note: str = ""
    #: a TORCH_TRACE log's parse problems, and rank logs of more than one run, as warning lines for stderr ("" when
    #: none; the line after the first starts with ``tcinspect: warning:`` itself)
    warning: str = ""


def obtain(request: Request) -> Report:
    """The report ``request`` asks for. A run that failed is still a report, whose ``failure`` says why and
    gives the exit code (errors.exit_code_for); bad input raises a TcinspectError."""
    return obtained(request).report


#: The fix line of a failed capture, by failure kind, when the failure brings none of its own.
CAPTURE_FIXES = {"stage": "the report shows the stages that worked; --debug for details",
                 "user_target": "fix that target (--debug for its traceback); the report shows what ran before it"}


def _with_failure(rep: Report, fix: str) -> Report:
    """``rep`` (not ok) with its failure typed and a fix line; a failure it brings keeps its own."""
    found = rep.failure or Failure("stage", rep.error)
    return rep.replace(failure=replace(found, fix=found.fix or fix))


def is_report_path(file: str) -> bool:
    return file.lower().endswith(REPORT_SUFFIXES)


def is_torch_trace(file: str) -> bool:
    """Whether ``file`` is a TORCH_TRACE log (``.gz`` too) or a directory, read as logs, not run; a URL always is."""
    from tcinspect.parse import logfiles
    from tcinspect.parse.tracelog import is_log

    if logfiles.is_url(file):
        return True
    path = Path(file)
    if path.is_dir():  # one with nothing named like a log is not taken for one (the model-file reader says what it is)
        return logfiles.looks_like_logs(path)
    if path.suffix == ".py" or not path.is_file():
        return False
    return is_log(path)


def obtained(request: Request) -> Obtained:
    """``obtain``, with where the report came from and what the parser did not understand, for stderr: the report of
    ``request.file`` (``_of_file``), then ``request.rank`` picks one rank of a distributed report or TORCH_TRACE
    directory, and ``request.strict`` turns what the parser did not understand (Report.parse) into an error (exit 2)."""
    file, rank, nproc = request.file, request.rank, request.nproc
    logs = file is not None and not is_report_path(file) and is_torch_trace(file)
    if rank is not None and not logs and nproc is None and (file is None or not is_report_path(file)):
        raise UsageError("--rank picks one rank of a TORCH_TRACE directory, a distributed report or an --nproc run",
                         "give a TORCH_TRACE log directory or a saved distributed report, or add --nproc N")
    if logs and file is not None:
        if nproc is not None:
            raise UsageError(f"{file} is a TORCH_TRACE log, read as it is: --nproc runs a model file",
                             "leave out --nproc")
        from tcinspect.parse import logfiles, rankpool

        rep = rankpool.read(file, rank=rank, jobs=request.jobs)
        what = "TORCH_TRACE directory" if rep.ranks or logfiles.is_directory(file) else "TORCH_TRACE log"
        ranks = f", {len(rep.ranks)} ranks" if rep.ranks else (f", rank {rank}" if rank is not None else "")
        ranks += _files_read(rep)
        if rep.ranks:
            from tcinspect.parse.ranks import rank_failure

            rep = rep.replace(failure=rank_failure(rep))
        elif not rep.ok:
            rep = _with_failure(rep, "the log shows the stages that worked before it")
        resolved = Obtained(rep, f"read {what} {file}{ranks}", _warning(rep))
    else:
        resolved = _of_file(request)
        if rank is not None:
            resolved = Obtained(_one_rank(resolved.report, rank, file or ""), resolved.note)
    parse = resolved.report.parse
    # a run that failed ends with its failure (shown with the report), as it did before --strict looked
    if request.strict and parse is not None and parse.damaged and resolved.report.failure is None:
        from tcinspect.analysis.parse_health import parse_warning

        raise TraceLogError(f"{file}: {parse_warning(resolved.report)}", "--strict fails on anything the parser "
                            "did not understand; leave it out to read the rest")
    return resolved


def load(file: str, rank: Optional[int] = None, strict: bool = False, jobs: Optional[int] = None) -> Obtained:
    """A saved report or a TORCH_TRACE log or directory, never a capture (``tcinspect diff``)."""
    if not is_report_path(file) and not is_torch_trace(file):
        serialize.load(file)  # its own precise error (missing file, not a report)
    return obtained(Request(file=file, rank=rank, strict=strict, jobs=jobs))


#: ignored files named on stderr; the rest are counted (every one is under parse.ignored_files in YAML/JSON)
_IGNORED_SHOWN = 5


def _files_read(rep: Report) -> str:
    """`` (rank 0: a.log … rank 3: d.log)`` and a line naming the files not read, for the note on stderr."""
    logs = [r for r in rep.ranks if r.log]
    text = ""
    if logs:
        first, last = logs[0], logs[-1]
        text = f" (rank {first.rank}: {first.log}" + (f" … rank {last.rank}: {last.log}" if last is not first else "") + ")"
    ignored = rep.parse.ignored_files if rep.parse is not None else ()
    if ignored:
        shown = "; ".join(f"{f.name} ({f.reason})" for f in ignored[:_IGNORED_SHOWN])
        more = len(ignored) - _IGNORED_SHOWN
        text += (f"\ntcinspect: not read, {len(ignored)} files: {shown}"
                 + (f"; and {more} more (all under parse.ignored_files in YAML/JSON)" if more > 0 else ""))
    return text


def _warning(rep: Report) -> str:
    """What the parser did not understand, and whether the rank logs are one run's: a warning line each."""
    from tcinspect.analysis.parse_health import parse_warning
    from tcinspect.derived.runs import mixed_runs_text

    said = [parse_warning(rep)] if rep.parse is not None and rep.parse.damaged else []
    said += [mixed_runs_text(rep.mixed_runs)] if rep.mixed_runs else []
    return "\ntcinspect: warning: ".join(said)


def _one_rank(rep: Report, rank: int, file: str) -> Report:
    from tcinspect.analysis import divergence
    from tcinspect.vocabulary import ranks_text

    found = next((r for r in rep.ranks if r.rank == rank), None)
    if found is None:
        have = ranks_text([r.rank for r in rep.ranks]) if rep.ranks else "no ranks"
        raise UsageError(f"{file or 'the report'} has no rank {rank} ({have})", "pick another --rank")
    return divergence.rank_report(rep, found)


#: The capture options a reused report must say it was recorded with when they differ from those asked for.
_COMPARED = ("backend", "mode", "dynamic", "backward", "fullgraph")


def _compared(options: Options) -> tuple[object, ...]:
    return tuple(getattr(options, f) for f in _COMPARED)


def recorded_options_note(recorded: Options, asked: Options) -> str:
    """``recorded with backend=inductor, backward (asked: eager, no backward)`` when a reused report was
    recorded with other options than those asked for; "" when they agree."""
    def words(o: Options, fields: Sequence[str]) -> str:
        out = []
        for f in fields:
            v = getattr(o, f)
            if f == "backward":
                out.append("backward" if v else "no backward")
            elif f == "fullgraph":
                out.append("fullgraph" if v else "no fullgraph")
            else:
                out.append(f"{f}={v or 'default'}")
        return ", ".join(out)

    differ = [f for f in _COMPARED if getattr(recorded, f) != getattr(asked, f)]
    if not differ:
        return ""
    return f"it answers for the options it was recorded with: {words(recorded, differ)} (asked: {words(asked, differ)})"


def _of_file(request: Request) -> Obtained:
    """The report for ``request.file``: a saved report, a current cached one, or a new capture.

    ``also_accept`` lists other capture options whose cached reports answer too (a full
    Inductor trace answers `breaks`, which itself needs only Dynamo). ``nproc`` runs the file on
    that many ranks under torchrun (tcinspect.capturing.launcher); ``timeout`` then bounds the whole job.
    ``isolate`` compiles in a child process even without ``timeout`` (a native crash is then a report).
    The model file is read and hashed once, here; an in-process capture or the launcher gets it as read.
    """
    file, options, nproc, script_args = request.file, request.options, request.nproc, request.script_args
    if request.launcher_args and nproc is None:
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
        differs = recorded_options_note(entry.report.options, options)
        if differs:
            target = entry.report.target.path or "the model file"
            differs += f"; give {target} to recompile with the options asked for"
        return Obtained(entry.report, entry.describe() + (f" ({differs})" if differs else ""))
    if is_report_path(file):
        return Obtained(cache.read_report(file), f"from saved report {file}")

    from tcinspect.capturing import modelfile

    path = Path(file)
    # the one read of the file (its precise error when it is missing, a directory, not Python, ...)
    source = modelfile.read(path, request.model, request.as_script)
    if not path.is_file():
        raise ModelFileError(f"'{path}' is not a regular file", "give a .py model file")
    if script_args and not source.is_script:
        raise UsageError(f"unexpected argument '{script_args[0]}': {file} is a model file (it defines "
                         f"`{request.model}`), which takes no arguments",
                         "remove it; only a script (a file without `model`) takes arguments after --")
    forced = () if request.as_script is None else ("--script",) if request.as_script else ("--model",)
    extra = (request.model, request.inputs_name, *script_args, *forced)
    if nproc is not None:  # a distributed report is its own entry, per rank count and torchrun options
        extra = (*extra, f"--nproc={nproc}", *request.launcher_args)
    keys = [cache.key(path, source.sha256, o, extra) for o in (options, *request.also_accept)]
    # a custom backend or pass lives in another file, whose changes the key would not see
    cacheable = not options.compile.runs_user_code
    if not request.fresh and cacheable:
        entry = cache.lookup(path, keys)
        if entry is not None and entry.report.summary.graphs_failed and _compared(entry.report.options) != \
                _compared(options):
            # its backend failed on graphs (run eagerly, each a "WON'T CONVERT" restart): Dynamo's graphs and
            # breaks under the backend asked for differ, so that report cannot answer for it
            entry = None
        if entry is not None and _unmeasured(entry.report, options):
            entry = None  # a CUDA capture that measured no peaks cannot answer a request to measure them
        if entry is not None:
            differs = recorded_options_note(entry.report.options, options)
            # current: the files it traced and what the user's Inductor cache holds for its look-ups are as they were
            return Obtained(entry.report, f"reusing the current report of {file} ({entry.describe()}"
                                          f"{'; ' + differs if differs else ''}; its traced files and your Inductor "
                                          "cache unchanged; --fresh to recompile cold)")

    if not request.fresh:
        _check_inductor_cache_dir()
    if nproc is not None and options.compile.dynamo_config:
        raise UsageError("dynamo_config applies to a capture in one child process, not to --nproc ranks",
                         "leave out --nproc, or set torch._dynamo.config in the script itself")
    if nproc is not None:
        from tcinspect.capturing import launcher

        # the merged report; a rank's failure is in its `failure` (parse.ranks.rank_failure)
        report = launcher.capture(request, source)
    elif request.timeout is not None or request.isolate or options.compile.dynamo_config:
        # dynamo_config is applied in the child alone (isolate._child), so that this process keeps its config
        from tcinspect.capturing.isolate import capture_isolated  # the child imports torch, not us

        report = capture_isolated(request, source)
    else:
        from tcinspect.capturing.engine import capture_file  # torch is imported only here

        report = capture_file(request, source=source)
    if not report.ok:  # typed by the capture: a stage, the user's own target, a crash or a rank's error
        kind = report.failure.kind if report.failure is not None else "stage"
        return Obtained(_with_failure(report, CAPTURE_FIXES.get(kind, CAPTURE_FIXES["stage"])))
    if cacheable:
        from tcinspect.analysis import caches

        # each cache miss against the same graph's look-up in the last recorded run of this file
        before = cache.previous(path)
        if before is not None:
            report = caches.with_changes(report, before.report, f"the last run ({before.describe()})")
        cache.store(path, keys[0], report)
    return Obtained(report)


def _unmeasured(rep: Report, options: Options) -> bool:
    """Whether ``rep`` lacks the peak measurement ``options`` ask for where its capture could have made one (a
    CUDA run with a memory section); a CPU capture measures nothing either way, so it answers."""
    return (options.measure_memory and rep.memory is not None and rep.memory.measured is None
            and rep.device.startswith("cuda") and rep.options.backward)


def _check_inductor_cache_dir() -> None:
    """Refuse a TORCHINDUCTOR_CACHE_DIR that cannot be read and searched: torch would fail mid-compile (or
    write elsewhere), and tcinspect would report a cache the user's runs never see. Nothing is created."""
    value = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not value or not os.path.lexists(value):
        return  # unset, or not there yet: torch creates it, as in the user's own run
    fix = "fix its permissions, point TORCHINDUCTOR_CACHE_DIR at a readable directory, or pass --fresh"
    if not os.path.isdir(value):
        raise UsageError(f"Inductor's cache directory {value} (TORCHINDUCTOR_CACHE_DIR) is not a directory", fix)
    if not os.access(value, os.R_OK | os.X_OK):
        raise UsageError(f"Inductor's cache directory {value} (TORCHINDUCTOR_CACHE_DIR) is not readable", fix)


#: the fix line of every input --try-fixes cannot re-run
_NEEDS_MODEL = "give the model file (.py with `model` and `example_inputs`) the report was made from"


def check_try_fixes(request: Request) -> None:
    """Refuse, before anything compiles, what ``breaks --try-fixes`` cannot re-run: no file, a saved report, a
    TORCH_TRACE log, a script, or --nproc ranks (a UsageError, exit 2)."""
    from tcinspect.capturing import modelfile

    file = request.file
    if file is None:
        raise UsageError("--try-fixes re-runs a model file, and none was given", _NEEDS_MODEL)
    if is_report_path(file):
        raise UsageError(f"--try-fixes re-runs a model file, and {file} is a saved report", _NEEDS_MODEL)
    if is_torch_trace(file):
        raise UsageError(f"--try-fixes re-runs a model file, and {file} is a TORCH_TRACE log", _NEEDS_MODEL)
    if request.nproc is not None:
        raise UsageError("--try-fixes runs each trial in one process, not on --nproc ranks", "leave out --nproc")
    if modelfile.read(Path(file), request.model, request.as_script).is_script:
        raise UsageError(f"--try-fixes re-runs a model on its example inputs, and {file} is run as a script "
                         f"(it defines no `{request.model}`)", "define `model` and `example_inputs` in it")


def try_fix(request: Request, before: Report, fix: ConfigFix) -> FixTrial:
    """``fix`` tried in a capture of its own (capturing.tryfix: a child process, verified against eager, nothing
    stored) and judged against ``before``, the report of ``request`` that suggested it. A trial that fails is a
    FixTrial with its error; only a bug in tcinspect raises."""
    from tcinspect.analysis import fixes
    from tcinspect.capturing import tryfix

    check_try_fixes(request)
    try:
        after = tryfix.run(request, before, fix.setting)
    except DynamoConfigError as exc:  # this torch has no such config: nothing ran
        return fixes.judge(before, fix, error=exc.one_line(), tried=False)
    except TcinspectError as exc:  # the model raised under the setting, ...
        return fixes.judge(before, fix, error=exc.one_line())
    return fixes.judge(before, fix, after)


def try_fixes(request: Request, before: Report) -> tuple[FixTrial, ...]:
    """Each config fix ``before``'s graph breaks and eager frames suggest (analysis.fixes.candidates), tried one at a
    time (``try_fix``)."""
    from tcinspect.analysis.fixes import candidates

    return tuple(try_fix(request, before, fix) for fix in candidates(before))
