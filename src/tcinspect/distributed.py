"""Distributed runs (``--nproc N``): every rank of a torchrun job, merged into one report, and where
the ranks diverge.

PyTorch's own launcher does the launching: ``python -m torch.distributed.run --standalone
--nproc-per-node N -m tcinspect.recording.rank``. Each rank captures the model file in-process and
leaves its files in the directory named by ``TCINSPECT_RANKS_DIR`` (see ``RankFiles``): its report or
its error, the structured-trace events it streamed as they arrived, its output, and the Python stack
faulthandler wrote if it crashed or was stopped. Those files are the only way back, so a rank that
crashed or hung still shows what it recorded before, and the other ranks' reports are kept.

The merged report is rank 0's, with every rank under ``ranks``; ``divergences`` compares them. No
torch import here (a CUDA model file's GPU count is the one exception, asked only for such a file).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from tcinspect import __version__, interrupts, serialize
from tcinspect.errors import (
    CaptureCrashedError,
    DeviceError,
    RankFailedError,
    StageFailedError,
    TcinspectError,
    UsageError,
)
from tcinspect.report import (
    OK,
    Divergence,
    Options,
    RankGroup,
    RankReport,
    Report,
    Target,
    break_identity,
)

#: Set for each rank by the parent: the directory of the per-rank files.
RANKS_DIR_ENV = "TCINSPECT_RANKS_DIR"
REQUEST = "request.json"
RANK_MODULE = "tcinspect.recording.rank"

#: Rank statuses with no result file: the rank ended before it could write one.
ENDED = ("crashed", "timed_out", "stopped", "missing")
#: Ranks whose run finished: a compile they lack is a divergence, not a rank that stopped early.
_FINISHED = ("ok", "failed", "error")

#: Seconds between asking torchrun to stop (SIGTERM, which it forwards to every rank) and killing.
STOP_GRACE_S = 10.0

# torchrun options tcinspect sets itself, and those that pick a rendezvous (then no --standalone)
_OURS = {"--nproc-per-node", "--nproc_per_node", "-m", "--module", "--no-python", "--no_python", "--run-path",
         "--run_path"}
_RENDEZVOUS = {"--standalone", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-backend", "--rdzv_backend",
               "--rdzv-id", "--rdzv_id", "--master-addr", "--master_addr", "--master-port", "--master_port"}


@dataclass(frozen=True)
class RankFiles:
    """Where one rank leaves its files (the parent reads them back after the job)."""

    directory: Path
    rank: int

    def _file(self, suffix: str) -> Path:
        return self.directory / f"rank-{self.rank}.{suffix}"

    @property
    def pid(self) -> Path:
        return self._file("pid")

    @property
    def log(self) -> Path:
        """The rank's stdout and stderr (the model's prints, torch's warnings)."""
        return self._file("log")

    @property
    def events(self) -> Path:
        """Structured-trace events, one JSON line each, appended as they arrive."""
        return self._file("events.jsonl")

    @property
    def fault(self) -> Path:
        """faulthandler's dump on a fatal signal (SIGSEGV, SIGABRT, ...)."""
        return self._file("fault")

    @property
    def stopped(self) -> Path:
        """faulthandler's dump on SIGTERM: where the rank was when torchrun stopped it."""
        return self._file("stopped")

    @property
    def result(self) -> Path:
        """``{"report": ...}``, ``{"error": ...}`` or ``{"internal": traceback}``, written last."""
        return self._file("json")


# ----------------------------------------------------------------------------- launching


def torchrun_args(values: Sequence[str]) -> list[str]:
    """``--torchrun-arg`` values as torchrun tokens (each value shell-split), checked."""
    tokens = [t for v in values for t in shlex.split(v)]
    for i, tok in enumerate(tokens):
        name, _, value = tok.partition("=")
        if not tok.startswith("-"):
            if i and "=" not in tokens[i - 1] and tokens[i - 1].startswith("-"):
                continue  # the value of the option before it ("--max-restarts 1")
            raise UsageError(f"--torchrun-arg {tok!r} is not a torchrun option",
                             "pass torchrun options (e.g. --torchrun-arg=--master-port=29501); a script's own "
                             "arguments go after `--`")
        if name in _OURS:
            raise UsageError(f"--torchrun-arg {name} is set by tcinspect",
                             "give the rank count as --nproc N; each rank runs tcinspect's own capture")
        if name == "--nnodes":
            value = value or (tokens[i + 1] if i + 1 < len(tokens) else "")
            if value not in ("1", "1:1"):
                raise UsageError(f"--torchrun-arg --nnodes {value} asks for several nodes, which tcinspect does not "
                                 "collect (each rank's report comes back through a directory on this machine)",
                                 "run the ranks of one node (--nnodes 1)")
    return tokens


def torchrun_command(nproc: int, args: Sequence[str]) -> list[str]:
    """The torchrun command line: --standalone (a free port) unless the args pick a rendezvous."""
    names = {a.partition("=")[0] for a in args}
    standalone = [] if names & _RENDEZVOUS else ["--standalone"]
    return [sys.executable, "-m", "torch.distributed.run", *standalone, f"--nproc-per-node={nproc}", *args,
            "-m", RANK_MODULE]


def check_nproc(nproc: int, device: str, cuda_count: Optional[Callable[[], int]] = None) -> None:
    """Refuse a rank count this machine cannot run, before anything is launched."""
    if nproc < 1:
        raise UsageError(f"--nproc {nproc}: a job needs at least one rank", "pass --nproc 1 or more")
    if device.startswith("cuda"):
        count = (cuda_count or _cuda_device_count)()
        if nproc > count:
            raise DeviceError(f"--nproc {nproc} asks for {nproc} ranks of a CUDA model file, but this machine has "
                              f"{count} CUDA GPU{'s' if count != 1 else ''} (one rank per GPU)",
                              f"pass --nproc {count} or fewer" if count else "run it on a machine with CUDA GPUs")
        return
    cores = os.cpu_count() or 1
    if nproc > cores * 4:
        raise UsageError(f"--nproc {nproc} is more CPU ranks than this {cores}-core machine runs (at most {cores * 4})",
                         f"pass --nproc {cores * 4} or fewer")


def _cuda_device_count() -> int:
    import torch  # only for a CUDA model file: the one question only torch answers reliably

    return int(torch.cuda.device_count())


def capture(path: str | os.PathLike, *, nproc: int, launcher_args: Sequence[str] = (), model_name: str = "model",
            inputs_name: str = "example_inputs", options: Optional[Options] = None, fresh: bool = False,
            script_args: Sequence[str] = (), quiet: bool = False, timeout: Optional[float] = None,
            as_script: Optional[bool] = None) -> Report:
    """Capture a model file (or script) on every rank of a torchrun job; one report with ``ranks``.

    Args:
        path: the model file or script; it initialises its own process group from torchrun's
            environment (``dist.init_process_group("gloo")`` on CPU).
        nproc: ranks on this machine (torchrun's ``--nproc-per-node``).
        launcher_args: further torchrun tokens (``--master-port=29501``; then ``--standalone`` is
            not added).
        timeout: seconds for the whole job; then every rank still running is stopped.

    Raises CaptureCrashedError (a rank crashed, hung or never started), RankFailedError (a rank
    raised) or StageFailedError (a rank's compile failed), each carrying the merged report.
    """
    from tcinspect.recording import modelfile

    opts = options or Options()
    src = modelfile.read(path, model_name, as_script)  # a syntax error is one error here, not one per rank
    device = opts.device or src.device
    check_nproc(nproc, device)
    args = torchrun_args(launcher_args)
    with tempfile.TemporaryDirectory(prefix="tcinspect-ranks-") as tmp:
        directory = Path(tmp)
        request = {"path": str(path), "model_name": model_name, "inputs_name": inputs_name, "options": asdict(opts),
                   "fresh": fresh, "script_args": list(script_args), "quiet": quiet, "device": device,
                   "as_script": as_script}
        (directory / REQUEST).write_text(json.dumps(request), encoding="utf-8")
        env = dict(os.environ, **{RANKS_DIR_ENV: str(directory)})
        start = time.perf_counter()
        code, timed_out, launcher_output = run_launcher(torchrun_command(nproc, args), env, directory, nproc, timeout)
        seconds = time.perf_counter() - start
        forward_output(directory, nproc, launcher_output if not quiet else "")
        ranks, reports = collect(directory, nproc, Path(path), model_name, opts, timed_out, launcher_output)
    if not timed_out and all(r.status == "missing" for r in ranks):
        raise UsageError(f"torchrun started no rank (exit status {code}): {_last_line(launcher_output)}",
                         "check the --torchrun-arg values (python -m torch.distributed.run --help lists them)")
    base = _base(ranks, reports, src, Path(path), model_name, inputs_name, opts, device)
    merged = merge(base, ranks, timings=(("torchrun_s", round(seconds, 3)),))
    raise_for_ranks(merged, timeout if timed_out else None)
    return merged


def run_launcher(cmd: list[str], env: dict[str, str], directory: Path, nproc: int,
                 timeout: Optional[float]) -> tuple[Optional[int], bool, str]:
    """Run torchrun to the end (or past ``timeout``); its exit status, whether it timed out, its output."""
    with open(directory / "torchrun.log", "w+b") as out:
        # its own session, so that stopping it reaches nothing of ours; the ranks have their own
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            with interrupts.cleanup(lambda: kill(proc, directory, nproc)):
                code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = stop(proc, directory, nproc)
        except BaseException:  # Ctrl-C: the job is in another session, so it did not get the SIGINT
            kill(proc, directory, nproc)  # at once: nobody waits for the ranks' stacks now
            proc.wait()
            raise
        out.seek(0)
        return code, timed_out, out.read().decode("utf-8", errors="replace")


def stop(proc: subprocess.Popen, directory: Path, nproc: int) -> Optional[int]:
    """Stop the job: SIGTERM to torchrun, which forwards it to every rank (torchrun's default
    --signals-to-handle), so each rank's faulthandler records where it was; then SIGKILL what is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        code = proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        code = proc.wait()
    for rank in range(nproc):
        # each rank leads its own session (torchrun starts it so) with any compile workers it started
        try:
            pid = int(RankFiles(directory, rank).pid.read_text().strip())
        except (OSError, ValueError):
            continue
        _signal_group(pid, signal.SIGKILL)
    return code


def kill(proc: subprocess.Popen, directory: Path, nproc: int) -> None:
    """SIGKILL torchrun's process group and every rank's (each rank leads its own session)."""
    _signal_group(proc.pid, signal.SIGKILL)
    for rank in range(nproc):
        try:
            pid = int(RankFiles(directory, rank).pid.read_text().strip())
        except (OSError, ValueError):
            continue
        _signal_group(pid, signal.SIGKILL)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def forward_output(directory: Path, nproc: int, launcher_output: str) -> None:
    """Each rank's own output on our stderr, line by line as ``[rank N] ...``; torchrun's when asked."""
    if launcher_output.strip():
        sys.stderr.write(launcher_output if launcher_output.endswith("\n") else launcher_output + "\n")
    for rank in range(nproc):
        try:
            text = RankFiles(directory, rank).log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            sys.stderr.write(f"[rank {rank}] {line}\n")
    sys.stderr.flush()


# ----------------------------------------------------------------------------- reading the ranks back


_FATAL = re.compile(r"^Fatal Python error: (?P<what>.+)$", re.M)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)', re.M)
# torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors): per failed rank
_EXITCODE = re.compile(r"rank\s*:\s*(?P<rank>\d+)\s*\(local_rank[^)]*\)\s*\n\s*exitcode\s*:\s*(?P<code>-?\d+)")


def collect(directory: Path, nproc: int, path: Path, model_name: str, options: Options, timed_out: bool,
            launcher_output: str = "") -> tuple[list[RankReport], dict[int, Report]]:
    """Every rank's RankReport from its files, and the full reports of those that wrote one."""
    ranks, reports = [], {}
    exit_codes = {int(m["rank"]): int(m["code"]) for m in _EXITCODE.finditer(launcher_output)}
    for rank in range(nproc):
        files = RankFiles(directory, rank)
        rr, rep = read_rank(files, path, model_name, options, timed_out, exit_codes.get(rank))
        ranks.append(rr)
        if rep is not None:
            reports[rank] = rep
    return ranks, reports


def read_rank(files: RankFiles, path: Path, model_name: str, options: Options, timed_out: bool,
              exit_code: Optional[int] = None) -> tuple[RankReport, Optional[Report]]:
    """One rank's outcome: its report if it wrote one, else what its events and dumps say."""
    from tcinspect.recording import ddp
    from tcinspect.recording.events import read_jsonl

    events = read_jsonl(files.events) if _complete_lines(files.events) else []
    splits = ddp.splits(events)
    data = _read_json(files.result)
    if data is not None and "internal" in data:
        raise RuntimeError(f"rank {files.rank}: internal error in tcinspect:\n{data['internal']}")
    if data is not None and "report" in data:
        rep = serialize.from_dict(data["report"])
        return (RankReport(rank=files.rank, status=OK if rep.ok else "failed", error=rep.error, device=rep.device,
                           stages=rep.stages, compiles=rep.compiles, calls=rep.calls, input_errors=rep.input_errors,
                           ddp_splits=splits, compile_time=rep.compile_time), rep)
    if data is not None and "error" in data:
        err = data["error"]
        text = TcinspectError(str(err.get("cause", "")), str(err.get("fix", ""))).one_line()
        partial = _recorded(events, options, None)
        return (RankReport(rank=files.rank, status="error", error=text, device=options.device, stages=partial[0],
                           compiles=partial[1], ddp_splits=splits, compile_time=_compile_time(events)), None)
    fault, stopped = _read_text(files.fault), _read_text(files.stopped)
    fatal = _FATAL.search(fault)
    if not files.pid.exists():
        status, why = "missing", "torchrun started no process for it"
    elif fatal:
        status, why = "crashed", fatal["what"].strip()
    elif timed_out:
        status, why = "timed_out", "still running at --timeout, so it was stopped"
    elif stopped.strip():
        status, why = "stopped", "torchrun ended it when another rank failed"
    else:
        status, why = "crashed", f"ended without a result ({_exit_text(exit_code)})"
    where = _where(fault or stopped, path)
    if not files.events.exists():
        return RankReport(rank=files.rank, status=status, error=why, where=where, device=options.device), None
    partial = _partial_stages(files.events, path, model_name, options, f"rank {files.rank} {status}: {why}")
    return RankReport(rank=files.rank, status=status, error=why, where=where, device=options.device,
                      stages=partial.stages, compiles=partial.compiles, ddp_splits=splits,
                      compile_time=partial.compile_time), None


def _recorded(events: list, options: Options, failure: Any) -> tuple[Any, Any]:
    from tcinspect.recording import assemble

    return assemble.build(events, backend=options.backend, failure=failure)


def _compile_time(events: list) -> Any:
    from tcinspect.recording import compiletime

    return compiletime.build(events)


def _partial_stages(events_file: Path, path: Path, model_name: str, options: Options, why: str) -> Report:
    from tcinspect.recording.isolate import partial_report

    return partial_report(events_file, path, model_name, options, why)


def _complete_lines(events_file: Path) -> bool:
    """Drop a half-written last line (the rank died mid-write); whether there is anything to read."""
    try:
        data = events_file.read_bytes()
    except OSError:
        return False
    if data and not data.endswith(b"\n"):
        events_file.write_bytes(data[: data.rfind(b"\n") + 1])
    return True


def _read_json(p: Path) -> Optional[dict]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _exit_text(code: Optional[int]) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _where(dump: str, path: Path) -> str:
    """'file:line' of the most recent frame in the user's file in a faulthandler dump, or ''."""
    target = os.path.realpath(path)
    for m in _FRAME.finditer(dump):
        if os.path.realpath(m["file"]) == target:
            return f"{Path(m['file']).name}:{m['line']}"
    return ""


def _last_line(text: str) -> str:
    """The line of torchrun's output that says why it failed (its last error line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("*", " ", "=", "-"))]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or ["no output"])[-1]


def _base(ranks: Sequence[RankReport], reports: dict[int, Report], src: Any, path: Path, model_name: str,
          inputs_name: str, options: Options, device: str) -> Report:
    """The top level of the merged report: rank 0's report, or what rank 0 recorded."""
    if 0 in reports:
        return reports[0]
    other = next(iter(reports.values()), None)
    from tcinspect.cache import installed_torch_version

    r0 = ranks[0]
    target = other.target if other is not None else Target(
        kind="script" if src.is_script else "model", path=str(path), sha256=src.sha256,
        model_name="" if src.is_script else model_name, inputs_name="" if src.is_script else inputs_name)
    return Report(torch_version=other.torch_version if other else installed_torch_version(),
                  device=(other.device if other else "") or device or "cpu", target=target,
                  options=other.options if other else options, stages=r0.stages, compiles=r0.compiles,
                  compile_time=r0.compile_time,
                  calls=r0.calls, input_errors=r0.input_errors, tcinspect_version=__version__)


def merge(base: Report, ranks: Sequence[RankReport], timings: tuple[tuple[str, float], ...] = ()) -> Report:
    """``base`` (rank 0's report) with every rank under ``ranks``; its error names each rank that failed."""
    failed = [r for r in ranks if r.status != OK]
    error = "; ".join(f"rank {r.rank} {r.status}: {outcome(r)}" for r in failed)
    return base.replace(ranks=tuple(sorted(ranks, key=lambda r: r.rank)), error=error,
                        timings=tuple(base.timings) + tuple(timings))


def raise_for_ranks(rep: Report, timeout: Optional[float] = None) -> None:
    """The error a failed rank means for the whole run, carrying the merged report (exit 4, 2 or 3)."""
    bad = [r for r in rep.ranks if r.status != OK]
    if not bad:
        return
    n = len(rep.ranks)
    # a rank that torchrun stopped is a consequence of another's failure, not a cause
    causes = [r for r in bad if r.status != "stopped"] or bad
    first = causes[0]
    also = [r for r in bad if r is not first]
    tail = f"; {', '.join(f'rank {r.rank} {r.status}' for r in also)}" if also else ""
    if timeout is not None:
        running = ", ".join(f"rank {r.rank}" + (f" in {r.where}" if r.where else "") for r in bad
                            if r.status == "timed_out")
        raise CaptureCrashedError(f"the torchrun job ran past --timeout {timeout:g} s and was stopped "
                                  f"({running or 'no rank was running'})",
                                  "look for a hang, or a collective one rank never reaches (the table shows where "
                                  "each rank was), or raise --timeout", rep)
    if any(r.status in ENDED for r in causes):
        raise CaptureCrashedError(f"rank {first.rank} of {n} {first.status}: {outcome(first)}{tail}",
                                  "each rank's stages recorded before it ended are shown, and its own output "
                                  "above ([rank N] lines)", rep)
    if any(r.status == "error" for r in causes):
        first = next(r for r in causes if r.status == "error")
        cause, _, fix = first.error.partition(" — ")
        raise RankFailedError(f"rank {first.rank} of {n}: {cause}{tail}", fix, rep)
    raise StageFailedError(f"rank {first.rank} of {n}: {first.error}{tail}",
                           "the report shows the stages that worked on each rank; --debug for details", rep)


# ----------------------------------------------------------------------------- per-rank views


def rank_report(rep: Report, rr: RankReport) -> Report:
    """One rank as a whole report (for the commands and checks that read one)."""
    return rep.replace(stages=rr.stages, compiles=rr.compiles, calls=rr.calls, input_errors=rr.input_errors,
                       device=rr.device or rep.device, error="" if rr.status == OK else rr.error, ranks=(),
                       compile_time=rr.compile_time)


def per_rank(rep: Report) -> list[tuple[str, Report]]:
    """(prefix, report) for each rank of a distributed report ("rank 1: "); just ``("", rep)`` otherwise."""
    if not rep.ranks:
        return [("", rep)]
    return [(f"rank {r.rank}: ", rank_report(rep, r)) for r in rep.ranks]


def labelled(findings: Sequence[Any], prefix: str) -> list[Any]:
    """``check`` findings of one rank, each message starting with the rank."""
    return [replace(f, message=prefix + f.message) for f in findings]


def document(rep: Report, build: Callable[[Report], dict[str, Any]]) -> dict[str, Any]:
    """A command's YAML/JSON document, with each rank's own under ``ranks`` and the divergences."""
    doc = build(rep)
    if not rep.ranks:
        return doc
    shared = ("torch_version", "target", "device")
    doc["ranks"] = [{"rank": r.rank, "status": r.status, "error": r.error,
                     **{k: v for k, v in build(rank_report(rep, r)).items() if k not in shared}} for r in rep.ranks]
    doc["divergence"] = [serialize_divergence(d) for d in divergences(rep.ranks)]
    return doc


def serialize_divergence(d: Divergence) -> dict[str, Any]:
    return {"compile_id": d.compile_id, "aspect": d.aspect,
            "groups": [{"ranks": list(g.ranks), "value": g.value} for g in d.groups]}


#: Aspects shown in the divergence but not failed by ``check`` (compile_ids repeats the compile aspect).
_INFORMATIONAL = ("cache", "compile_ids")
#: The aspect that best says why ranks differ at a compile, most telling first (the rest follow from it).
_TELLING = ("graph_breaks", "recompiles", "compile", "graph", "ddp_split", "guards", "kernels")


def divergence_findings(model: str, rep: Report) -> list[Any]:
    """``check``'s findings: a failure for ranks that ended differently and one for the first compile
    where they differ (at the user's line of a break only some ranks took); one pass if they agree."""
    from tcinspect.checks import Finding

    if not rep.ranks:
        return []
    # a cache outcome that differs (one rank filled a shared cache, the others read it) is shown, not failed
    divs = tuple(d for d in divergences(rep.ranks) if d.aspect not in _INFORMATIONAL)
    if not divs and any(r.status != OK for r in rep.ranks):
        return []  # every rank failed alike: the failure is the finding, not an agreement
    if not divs:
        return [Finding(model, "rank divergence", "ok", f"all {len(rep.ranks)} ranks compiled the same")]
    out = [Finding(model, "rank divergence", "fail", describe(d), rep.target.path) for d in divs if not d.compile_id]
    first = first_compile(divs)
    if first:
        here = [d for d in divs if d.compile_id == first]
        lead = min(here, key=lambda d: _TELLING.index(d.aspect) if d.aspect in _TELLING else len(_TELLING))
        later = sorted({d.compile_id for d in divs if d.compile_id and d.compile_id != first}, key=compile_order)
        message = (f"ranks diverge first at compile {first} ({', '.join(d.aspect for d in here)}): "
                   + describe(lead).split("): ", 1)[1]
                   + (f"; later compiles differ too: {', '.join(later)}" if later else ""))
        file, line = _break_line(rep.ranks, first) if lead.aspect == "graph_breaks" else (rep.target.path, 0)
        out.append(Finding(model, "rank divergence", "fail", message, file, line))
    return out


def _break_line(ranks: Sequence[RankReport], cid: str) -> tuple[str, int]:
    """Where the first break at ``cid`` is, on the first rank that broke there."""
    for r in ranks:
        for b in r.stages.dynamo.graph_breaks:
            if b.compile_id == cid and b.user_frame is not None:
                return b.user_frame.file, b.user_frame.line
    return "", 0


def describe(d: Divergence) -> str:
    """One line: where and how ranks differ."""
    where = f"at compile {d.compile_id}" if d.compile_id else "in the run"
    groups = "; ".join(f"{ranks_text(g.ranks)}: {g.value}" for g in d.groups)
    return f"ranks diverge {where} ({d.aspect}): {groups}"


def ranks_text(ranks: Sequence[int]) -> str:
    """``rank 1`` / ``ranks 0, 2-5``."""
    spans: list[str] = []
    nums = sorted(ranks)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        spans.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ("rank " if len(nums) == 1 else "ranks ") + ", ".join(spans)


# ----------------------------------------------------------------------------- divergence


def divergences(ranks: Sequence[RankReport]) -> tuple[Divergence, ...]:
    """Where ranks differ: a run-level status difference first, then each compile in order,
    comparing its presence, graph, graph breaks, guards, recompile, kernels and DDP split."""
    if len(ranks) < 2:
        return ()
    out: list[Divergence] = []
    status = _diverging("", "status", {r.rank: _status(r) for r in ranks})
    if status is not None:
        out.append(status)
    views = [_RankView(r) for r in ranks]
    for cid in sorted({c for v in views for c in v.compile_ids}, key=compile_order):
        present = [v for v in views if cid in v.compile_ids]
        # a rank that ended early is compared on the compiles it reached, not on those it never got to
        absent = [v for v in views if cid not in v.compile_ids and v.rank.status in _FINISHED]
        if absent:
            values = {v.rank.rank: ("compiled", f"compiled {v.function(cid)}".strip()) for v in present}
            values.update({v.rank.rank: ("absent", "not compiled") for v in absent})
            d = _diverging(cid, "compile", values)
            if d is not None:
                out.append(d)
            continue
        here = len(out)
        for aspect, value in _ASPECTS:
            d = _diverging(cid, aspect, {v.rank.rank: value(v, cid) for v in present})
            if d is not None:
                out.append(d)
        if len(out) == here:  # the same compile on every rank: did they all compile it, or load it from a cache?
            d = _diverging(cid, "cache", {v.rank.rank: _cache(v, cid) for v in present})
            if d is not None:
                out.append(d)
    finished = [v for v in views if v.rank.status in _FINISHED]
    d = _diverging("", "compile_ids", {v.rank.rank: _compile_ids(v) for v in finished})
    if d is not None:
        out.append(d)
    if not any(d.aspect == "guards" for d in out):
        return tuple(out)
    return tuple(_describe_guards(d, views) if d.aspect == "guards" else d for d in out)


def first_compile(divs: Sequence[Divergence]) -> str:
    """The first compile id where ranks differ ('' if they differ only in how the run ended)."""
    return next((d.compile_id for d in divs if d.compile_id), "")


def compile_order(cid: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", cid))


class _RankView:
    """One rank's report indexed by compile id."""

    def __init__(self, rank: RankReport) -> None:
        self.rank = rank
        dyn = rank.stages.dynamo
        self.graphs = {g.compile_id: g for g in dyn.graphs}
        self.breaks: dict[str, list] = {}
        for b in dyn.graph_breaks:
            self.breaks.setdefault(b.compile_id, []).append(b)
        self.recompiles = {r.compile_id: r for r in dyn.recompiles}
        self.outputs: dict[str, list] = {}
        for o in rank.stages.inductor.outputs:
            self.outputs.setdefault(o.compile_id, []).append(o)
        self.splits = {s.compile_id: s for s in rank.ddp_splits}
        self.metrics = {m.compile_id: m for m in rank.compiles}
        self.compile_ids = set(self.graphs) | set(self.breaks) | set(self.recompiles) | set(self.outputs) | \
            set(self.metrics)

    def function(self, cid: str) -> str:
        g = self.graphs.get(cid)
        m = self.metrics.get(cid)
        return (g.function if g else "") or (m.function if m else "")


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _status(r: RankReport) -> tuple[Any, str]:
    text = r.status if r.status == OK else f"{r.status}: {outcome(r)}"
    return (r.status, r.error, r.where), _clip(text)


def outcome(r: RankReport) -> str:
    """How a rank ended, with the user's line it was at when it crashed, hung or was stopped."""
    cause = r.error.partition(" — ")[0]  # a rank's error keeps its fix; the table shows the cause
    return cause + (f" (in {r.where})" if r.where and r.status in ENDED else "")


def _graph(v: _RankView, cid: str) -> tuple[Any, str]:
    g = v.graphs.get(cid)
    if g is None:
        return None, "no graph"
    nodes = g.graph.nodes
    key = tuple((n.op, n.target, n.dtype, n.shape) for n in nodes)
    calls = [n.target.rsplit(".", 1)[-1] for n in nodes if n.op in ("call_function", "call_method", "call_module")]
    inputs = ", ".join(f"{n.dtype}[{', '.join(n.shape)}]" for n in nodes if n.op == "placeholder" and n.dtype)
    text = _clip(f"{g.graph.op_count} ops: {', '.join(calls)}", 90)
    return key, text + (f" · inputs {_clip(inputs, 60)}" if inputs else "")


def _breaks(v: _RankView, cid: str) -> tuple[Any, str]:
    items = v.breaks.get(cid, [])
    if not items:
        return (), "no graph break"
    key = tuple(sorted({break_identity(b) for b in items}))
    text = "; ".join(f"{b.break_type} at {b.user_frame.short() if b.user_frame else '?'}" for b in items)
    return key, _clip(text)


# object ids and addresses in guards (ID_MATCH, TYPE_MATCH, ...) differ from process to process
_ADDRESS = re.compile(r"\b\d{7,}\b|0x[0-9a-fA-F]{6,}")
# each rank runs on its own GPU, so a tensor guard's device index differs by design: TENSOR_MATCH
# prints it as "device=1" (torch 2.11-2.15), a device as "cuda:1"
_DEVICE_INDEX = re.compile(r"(?<=device=)\d+|(?<=cuda:)\d+")
_KEYSET = re.compile(r"DispatchKeySet\([^)]*\),\s*")


def guard_key(g: Any) -> tuple[str, str, str]:
    """A guard as ranks compare it: without object ids and without the rank's own GPU index."""
    return g.guard_type, g.source, _DEVICE_INDEX.sub("#", _ADDRESS.sub("#", g.expression))


def _guards(v: _RankView, cid: str) -> tuple[Any, str]:
    g = v.graphs.get(cid)
    keys = frozenset(guard_key(x) for x in g.guards) if g is not None else frozenset()
    return keys, f"{len(keys)} guards"


def _recompiles(v: _RankView, cid: str) -> tuple[Any, str]:
    r = v.recompiles.get(cid)
    if r is None:
        return None, "no recompile"
    return r.reasons, _clip("recompiled: " + ("; ".join(r.reasons) or "(PyTorch gave no reason)"))


def _kernels(v: _RankView, cid: str) -> tuple[Any, str]:
    outs = v.outputs.get(cid, [])
    key = tuple((o.part, tuple(k.name for k in o.kernels)) for o in outs)
    names = [k.name for o in outs for k in o.kernels]
    return key, _clip(f"{len(names)} kernels" + (f": {', '.join(names)}" if names else ""))


def _cache(v: _RankView, cid: str) -> tuple[Any, str]:
    """The compile's cache outcomes: AOTAutograd's, then the FX graph cache's for each Inductor output."""
    m = v.metrics.get(cid)
    aot = m.aot_autograd_cache if m is not None else ""
    fx = tuple((o.part, o.cache) for o in v.outputs.get(cid, []) if o.cache)
    if not aot and not fx:
        return ((), ()), "no cache look-up"
    text = ([f"AOTAutograd cache {aot}"] if aot else []) + [f"FX graph cache {part} {state}" for part, state in fx]
    return (aot, fx), ", ".join(text)


def _compile_ids(v: _RankView) -> tuple[Any, str]:
    ids = tuple(sorted(v.compile_ids, key=compile_order))
    return ids, _clip(f"{len(ids)} compiles: {' '.join(ids)}")


def _ddp(v: _RankView, cid: str) -> tuple[Any, str]:
    s = v.splits.get(cid)
    if s is None:
        return None, "not split"
    key = tuple((c.name, c.parameters) for c in s.children)
    return key, _clip(f"{len(s.children)} buckets: " + " | ".join(
        f"{c.name} {len(c.parameters)} params" for c in s.children))


_ASPECTS: tuple[tuple[str, Callable[[_RankView, str], tuple[Any, str]]], ...] = (
    ("graph", _graph), ("graph_breaks", _breaks), ("guards", _guards), ("recompiles", _recompiles),
    ("kernels", _kernels), ("ddp_split", _ddp),
)


def _diverging(cid: str, aspect: str, values: dict[int, tuple[Any, str]]) -> Optional[Divergence]:
    """Ranks grouped by value (first-rank order); None when they all agree."""
    groups: dict[Any, list[int]] = {}
    texts: dict[Any, str] = {}
    for rank in sorted(values):
        key, text = values[rank]
        groups.setdefault(key, []).append(rank)
        texts.setdefault(key, text)
    if len(groups) < 2:
        return None
    return Divergence(compile_id=cid, aspect=aspect,
                      groups=tuple(RankGroup(tuple(ranks), texts[key]) for key, ranks in groups.items()))


def _describe_guards(d: Divergence, views: Sequence[_RankView]) -> Divergence:
    """Each group's guards that not every group has: what one rank assumed and another did not."""
    by_rank = {v.rank.rank: v for v in views}
    sets = []
    for g in d.groups:
        graph = by_rank[g.ranks[0]].graphs.get(d.compile_id)
        sets.append({guard_key(x): x for x in (graph.guards if graph is not None else ())})
    common = set.intersection(*(set(s) for s in sets))
    groups = []
    for g, guards in zip(d.groups, sets):
        own = [_KEYSET.sub("", x.expression) for k, x in guards.items() if k not in common]
        text = f"{len(guards)} guards" + (f"; only here: {'; '.join(own[:3])}" + (" …" if len(own) > 3 else "")
                                          if own else "")
        groups.append(RankGroup(g.ranks, _clip(text, 160)))
    return Divergence(d.compile_id, d.aspect, tuple(groups))


def rank_values(rep: Report) -> list[tuple[RankReport, dict[str, Any]]]:
    """Each rank with the summary counts the per-rank table shows."""
    out = []
    for r in rep.ranks:
        s = r.summary
        out.append((r, {"graphs": s.graphs, "graph_breaks": s.graph_breaks, "recompiles": s.recompiles,
                        "guards": s.guards, "kernels": s.kernels,
                        "ddp_buckets": sum(len(x.children) for x in r.ddp_splits),
                        "compile_time_s": s.compile_time_s}))
    return out


def breaks_key(rep: Report) -> Any:
    """What the `breaks` view of a rank shows: ranks with the same key are shown once."""
    dyn = rep.stages.dynamo
    return (tuple(g.graph.op_count for g in dyn.graphs),
            tuple((b.compile_id, break_identity(b)) for b in dyn.graph_breaks))


def guards_key(rep: Report) -> Any:
    """What the `guards` view of a rank shows, with object ids (which differ per process) masked."""
    dyn = rep.stages.dynamo
    return (tuple((g.compile_id, frozenset(guard_key(x) for x in g.guards)) for g in dyn.graphs),
            tuple((r.compile_id, r.reasons) for r in dyn.recompiles))
