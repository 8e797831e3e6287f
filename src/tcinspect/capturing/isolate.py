"""An isolated capture (the CLI's default): the compile runs in a child process, so a segfault, an abort
or a hang (--timeout) becomes one clear error, and the stages recorded before it are still reported.

The parent never imports torch: it starts ``python -m tcinspect.capturing.isolate REQUEST`` and
reads back either the report, the child's own one-line error, or (on a crash or timeout) the
structured-trace events the child streamed to a file as they arrived.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from tcinspect import collector, errors, interrupts, serialize
from tcinspect.capturing import prewarm
from tcinspect.errors import ChildInternalError
from tcinspect.report import Failure, Options, Report, Request, Target

if TYPE_CHECKING:
    from tcinspect.capturing.modelfile import ModelSource


def capture_isolated(request: Request, source: ModelSource) -> Report:
    """capture_file in a child process, stopped after ``request.timeout`` seconds (None: no limit). The
    child gets the request whole (``Request.to_json``) and the file's bytes as they were read and hashed.

    A crash or a timeout is a report of the stages recorded before it, whose ``failure`` is ``crashed``."""
    path, timeout = source.path, request.timeout
    warm = prewarm.take()  # started before the command line was parsed, as this would start it now
    with contextlib.ExitStack() as stack:
        if warm is not None:
            t = warm.directory
            stack.callback(shutil.rmtree, t, True)
        else:
            t = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tcinspect-child-")))
        (t / "request.json").write_text(request.to_json(), encoding="utf-8")
        (t / "source.py").write_bytes(source.text.encode("utf-8"))
        with (warm.output if warm is not None else open(t / "output.txt", "w+b")) as output:
            proc: Optional[subprocess.Popen[bytes]] = None
            if warm is not None:
                try:
                    os.write(warm.go, b"go\n")
                    proc = warm.proc
                except OSError:  # it ended since it was taken: a child of our own, as without one started ahead
                    _kill_group(warm.proc)
                    warm.proc.wait()
                    output.seek(0)
                    output.truncate()
                finally:
                    os.close(warm.go)
            if proc is None:
                # its own session: a Ctrl-C at the terminal reaches only us, and we end the child's whole
                # process group (its compile workers and g++ included) on the way out
                env = dict(os.environ, TCINSPECT_EVENTS_FILE=str(t / "events.jsonl"))
                proc = subprocess.Popen([sys.executable, "-m", "tcinspect.capturing.isolate", str(t)],
                                        env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
            with interrupts.cleanup(lambda: _kill_group(proc)):
                try:
                    code = proc.wait(timeout=timeout)
                    timed_out = False
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
                    code, timed_out = proc.wait(), True
                except BaseException:  # an interrupt: the child must not compile on as an orphan
                    _kill_group(proc)
                    proc.wait()
                    raise
            output.seek(0)
            _forward(output.read())
        result = t / "result.json"
        if result.exists() and timed_out:
            recorded = _recorded_before_locating(result, timeout)
            if recorded is not None:
                return recorded
        if result.exists() and not timed_out:
            data = json.loads(result.read_text(encoding="utf-8"))
            if "internal" in data:
                raise ChildInternalError(data["internal"])
            if "error" in data:
                err = data["error"]
                cls = getattr(errors, err["class"], errors.TcinspectError)
                raise cls(err["cause"], err["fix"])
            return serialize.from_dict(data["report"])
        if timed_out:
            why = f"the capture ran past --timeout {timeout:g} s and was stopped"
            fix = "look for a hang or an endless loop in the model, or raise --timeout"
        else:
            where = crash_site((t / "fault.txt").read_text(encoding="utf-8", errors="replace")
                               if (t / "fault.txt").exists() else "", path)
            why = f"the capture process crashed ({_signal_name(code)}){where}"
            fix = "the model or a compiled kernel crashed the interpreter; the stages recorded before are shown"
        partial = partial_report(t / "events.jsonl", path, request.model, request.options, why)
        return partial.replace(failure=Failure("crashed", why, fix))


def _recorded_before_locating(result: Path, timeout: Optional[float]) -> Optional[Report]:
    """The report the child wrote before it began locating a verify mismatch, if --timeout ended it there: the
    record is whole, and the search says what stopped it."""
    from dataclasses import replace

    from tcinspect.report import FirstDivergence

    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except ValueError:
        return None
    if not data.get("locating") or "report" not in data:
        return None
    rep = serialize.from_dict(data["report"])
    if rep.verification is None:
        return rep
    stopped = FirstDivergence(stopped=f"--timeout {timeout:g} s ran out while locating where results first depart",
                              note="raise --timeout, or bound the search with --locate-budget")
    return replace(rep, verification=replace(rep.verification, first_divergence=stopped))


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)', re.M)


def crash_site(dump: str, path: Path) -> str:
    """" in FUNCTION at FILE:LINE" for the innermost frame of the crashing thread in the user's file (else
    the innermost frame at all), from faulthandler's dump; "" when there is none."""
    current = dump.split("Current thread", 1)[-1].split("\nThread ", 1)[0]
    frames = list(_FRAME.finditer(current))  # most recent call first
    target = os.path.realpath(path)
    mine = [m for m in frames if os.path.realpath(m["file"]) == target]
    if not (mine or frames):
        return ""
    m = (mine or frames)[0]
    return f" in {m['fn']} at {Path(m['file']).name}:{m['line']}"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child and any compile workers it started
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _forward(data: bytes) -> None:
    """The child's own output (the model's prints, torch's logs) goes to our stderr."""
    if data:
        sys.stderr.write(data.decode("utf-8", errors="replace"))
        sys.stderr.flush()


def _signal_name(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def partial_report(events_file: Path, path: Path, model_name: str, options: Options, why: str) -> Report:
    """A report from the events streamed before the crash; the last stage seen carries the failure."""
    from tcinspect.cache import installed_torch_version
    from tcinspect.parse.events import read_trace
    from tcinspect.parse.fromevents import SourceHealth
    from tcinspect.parse.fromevents import partial_report as from_events

    # the child may have been stopped in the middle of writing a line
    evs, bad = read_trace(events_file) if events_file.exists() else ([], 0)
    return from_events(evs, why, target=Target(kind="model", path=str(path), model_name=model_name), options=options,
                       torch_version=installed_torch_version(), source=SourceHealth(lines_not_understood=bad))


def _child(directory: str, go: Optional[int] = None) -> int:
    """The child: capture the request in ``directory`` and write ``result.json`` there. Started ahead
    (capturing/prewarm.py), it first waits for a line on the pipe ``go``; it ends at once when none comes."""
    t = Path(directory)
    result = t / "result.json"
    # a native crash (an abort or a segfault in an extension) leaves the Python stack here for the parent
    fault = open(t / "fault.txt", "w", encoding="utf-8")  # noqa: SIM115 - open until the process ends
    faulthandler.enable(fault, all_threads=False)
    from tcinspect.capturing import modelfile
    from tcinspect.capturing.engine import capture_file

    if go is not None:
        with os.fdopen(go, "rb") as pipe:
            if pipe.readline().strip() != b"go":
                return 0  # the parent took no capture from us
    try:
        request = Request.from_json((t / "request.json").read_text(encoding="utf-8"))
        assert request.file is not None
        source = modelfile.of_bytes(Path(request.file), (t / "source.py").read_bytes(), request.model,
                                    request.as_script)

        def recorded(rep: Report) -> None:  # before a verify mismatch is located: kept, should --timeout end that
            _write_atomic(result, json.dumps({"report": serialize.to_dict(rep), "locating": True}))

        rep = capture_file(request, source=source, recorded=recorded)
        payload: dict[str, Any] = {"report": serialize.to_dict(rep)}
    except errors.TcinspectError as exc:
        payload = {"error": {"class": type(exc).__name__, "cause": exc.cause, "fix": exc.fix}}
    except Exception:  # noqa: BLE001 - a bug in tcinspect: the parent shows it as one, not as a crash
        payload = {"internal": traceback.format_exc()}
    _write_atomic(result, json.dumps(payload))
    return 0


def _write_atomic(path: Path, text: str) -> None:
    """``text`` to ``path`` whole or not at all (the parent may stop this process at any moment)."""
    part = path.with_suffix(".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


if __name__ == "__main__":
    # started ahead: python -m tcinspect.capturing.isolate --ready DIR FD
    status = _child(sys.argv[2], int(sys.argv[3])) if sys.argv[1] == "--ready" else _child(sys.argv[1])
    collector.finish_before_exit()  # the report is written: the exit, less the collector's walk of torch's heap
    sys.exit(status)
