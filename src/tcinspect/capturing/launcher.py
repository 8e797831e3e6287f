"""Distributed runs (``--nproc N``): every rank of a torchrun job, merged into one report, and where
the ranks diverge.

PyTorch's own launcher does the launching: ``python -m torch.distributed.run --standalone
--nproc-per-node N -m tcinspect.capturing.rank``. Each rank captures the model file in-process and
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from tcinspect import interrupts, serialize
from tcinspect._version import __version__
from tcinspect.errors import (
    DeviceError,
    TcinspectError,
    UsageError,
)
from tcinspect.parse.merge import merge
from tcinspect.parse.ranks import rank_failure
from tcinspect.report import (
    OK,
    Options,
    RankReport,
    Report,
    Request,
    Target,
)

if TYPE_CHECKING:
    from tcinspect.capturing.modelfile import ModelSource

#: Set for each rank by the parent: the directory of the per-rank files.
RANKS_DIR_ENV = "TCINSPECT_RANKS_DIR"
REQUEST = "request.json"
#: the model file as the launcher read and hashed it: every rank compiles these bytes
SOURCE = "source.py"
RANK_MODULE = "tcinspect.capturing.rank"


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


def capture(request: Request, source: Optional[ModelSource] = None) -> Report:
    """Capture a model file (or script) on every rank of a torchrun job; one report with ``ranks``.

    Args:
        request: ``file`` is the model file or script; it initialises its own process group from torchrun's
            environment (``dist.init_process_group("gloo")`` on CPU). ``nproc`` ranks on this machine
            (torchrun's ``--nproc-per-node``); ``launcher_args``, further torchrun tokens
            (``--master-port=29501``; then ``--standalone`` is not added); ``timeout``, seconds for the whole
            job, then every rank still running is stopped. Every rank gets the request whole.
        source: the file as already read and hashed (else it is read here); every rank compiles these bytes.

    A rank that failed makes the merged report's ``failure`` (parse.ranks.rank_failure): crashed (a
    rank crashed, hung or never started), rank_error (a rank raised) or stage (a rank's compile failed).
    """
    from tcinspect.capturing import modelfile

    if request.file is None or request.nproc is None:
        raise UsageError("--nproc runs a model file on several ranks, so it needs a .py file",
                         "give the model file or script, e.g. tcinspect trace train.py --nproc 2")
    path, nproc, timeout, model_name = Path(request.file), request.nproc, request.timeout, request.model
    opts = request.options
    # a syntax error is one error here, not one per rank
    src = source or modelfile.read(path, model_name, request.as_script)
    device = opts.device or src.device
    check_nproc(nproc, device)
    args = torchrun_args(request.launcher_args)
    with tempfile.TemporaryDirectory(prefix="tcinspect-ranks-") as tmp:
        directory = Path(tmp)
        (directory / REQUEST).write_text(request.to_json(), encoding="utf-8")
        (directory / SOURCE).write_bytes(src.text.encode("utf-8"))
        env = dict(os.environ, **{RANKS_DIR_ENV: str(directory)})
        start = time.perf_counter()
        code, timed_out, launcher_output = run_launcher(torchrun_command(nproc, args), env, directory, nproc, timeout)
        seconds = time.perf_counter() - start
        forward_output(directory, nproc, launcher_output if not request.quiet else "")
        ranks, reports = collect(directory, nproc, path, model_name, opts, timed_out, launcher_output)
    if not timed_out and all(r.status == "missing" for r in ranks):
        raise UsageError(f"torchrun started no rank (exit status {code}): {_last_line(launcher_output)}",
                         "check the --torchrun-arg values (python -m torch.distributed.run --help lists them)")
    base = _base(ranks, reports, src, path, model_name, request.inputs_name, opts, device)
    merged = merge(base, ranks, timings=(("torchrun_s", round(seconds, 3)),))
    return merged.replace(failure=rank_failure(merged, timeout if timed_out else None))


def run_launcher(cmd: list[str], env: dict[str, str], directory: Path, nproc: int,
                 timeout: Optional[float]) -> tuple[Optional[int], bool, str]:
    """Run torchrun to the end (or past ``timeout``); its exit status, whether it timed out, its output."""
    with open(directory / "torchrun.log", "w+b") as out:
        # its own session, so that stopping it reaches nothing of ours; the ranks have their own
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            with interrupts.cleanup(lambda: kill(proc, directory, nproc)):
                code: Optional[int] = proc.wait(timeout=timeout)
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
    from tcinspect.parse import ddp
    from tcinspect.parse.events import read_jsonl

    events = read_jsonl(files.events) if _complete_lines(files.events) else []
    splits = ddp.splits(events)
    data = _read_json(files.result)
    if data is not None and "internal" in data:
        raise RuntimeError(f"rank {files.rank}: internal error in tcinspect:\n{data['internal']}")
    if data is not None and "report" in data:
        rep = serialize.from_dict(data["report"])
        return (RankReport(rank=files.rank, status=OK if rep.ok else "failed", error=rep.error, device=rep.device,
                           stages=rep.stages, compiles=rep.compiles, calls=rep.calls, input_errors=rep.input_errors,
                           ddp_splits=splits, compile_time=rep.compile_time,
                           graph_execution_order=rep.graph_execution_order), rep)
    if data is not None and "error" in data:
        err = data["error"]
        text = TcinspectError(str(err.get("cause", "")), str(err.get("fix", ""))).one_line()
        recorded = _from_events(events, path, model_name, options)
        return (RankReport(rank=files.rank, status="error", error=text, device=options.device, stages=recorded.stages,
                           compiles=recorded.compiles, ddp_splits=splits, compile_time=recorded.compile_time,
                           graph_execution_order=recorded.graph_execution_order), None)
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
    partial = _from_events(events, path, model_name, options, f"rank {files.rank} {status}: {why}")
    return RankReport(rank=files.rank, status=status, error=why, where=where, device=options.device,
                      stages=partial.stages, compiles=partial.compiles, ddp_splits=splits,
                      compile_time=partial.compile_time, graph_execution_order=partial.graph_execution_order), None


def _from_events(events: list, path: Path, model_name: str, options: Options, why: str = "") -> Report:
    """What a rank that wrote no report recorded, through the one events -> report function; ``why`` is
    how it ended (the last stage it reached carries it), "" when it ended with its own error."""
    from tcinspect.cache import installed_torch_version
    from tcinspect.parse.fromevents import partial_report, report_from_events

    target = Target(kind="model", path=str(path), model_name=model_name)
    if why:
        return partial_report(events, why, target=target, options=options, torch_version=installed_torch_version())
    return report_from_events(events, target=target, options=options, device=options.device or "?",
                              torch_version=installed_torch_version())


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
