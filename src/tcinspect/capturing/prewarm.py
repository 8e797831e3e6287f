"""The capture's child process, started before the command line is parsed: while this process imports the CLI and
reads its options (0.3-0.5 s), the child already imports torch, which it would otherwise begin only then.

``start(argv)`` runs first in ``python -m tcinspect`` and the ``tcinspect`` script. Where the words look like a
capture of a model file (a capturing command and a ``.py`` file that exists), it starts ``python -m
tcinspect.capturing.isolate --ready DIR FD``: the child opens its fault file, imports what it imports before
reading a request, and waits on the pipe FD. ``take()`` gives it to the isolated capture (isolate.capture_isolated),
which writes the request into DIR and says go; it starts nothing new. A child is taken only while this process's
environment and working directory are still the ones it was started with, so it compiles exactly as one started
then would. One not taken (a saved report reused, a usage error, ``--help``) is stopped at exit (``discard``). Only
the standard library is imported here. ``TCINSPECT_NO_PREWARM=1`` turns it off.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

#: The commands that capture a model file in a child process (they take ``--timeout``).
CAPTURING = frozenset({"trace", "breaks", "guards", "codegen", "compile-time", "check", "memory", "shapes"})
#: Words after which the capture is not a child's: it runs in this process (--debug), over several ranks
#: (--nproc), or not at all (--help).
_NOT_A_CHILD = frozenset({"--debug", "--nproc", "--help", "-h"})
OFF_ENV = "TCINSPECT_NO_PREWARM"
#: Set to 1 to compile in tcinspect's own process instead of a child (as --debug does): then none is started ahead.
IN_PROCESS_ENV = "TCINSPECT_IN_PROCESS"


@dataclass
class Warm:
    """A child started ahead: its directory, its output file, the pipe it waits on, what it was started with."""

    proc: subprocess.Popen[bytes]
    directory: Path
    output: IO[bytes]
    go: int  # the write end of the pipe the child waits on
    env: dict[str, str]
    cwd: str


_warm: list[Warm] = []


def wanted(argv: list[str]) -> bool:
    """Whether ``argv`` (the words after ``tcinspect``) will likely compile a model file in a child process."""
    if os.environ.get(OFF_ENV, "") not in ("", "0") or in_process_asked():
        return False
    words = [w.split("=", 1)[0] for w in argv]
    if not words or words[0] not in CAPTURING or _NOT_A_CHILD.intersection(words):
        return False
    return any(w.endswith(".py") and os.path.isfile(w) for w in argv[1:])


def in_process_asked() -> bool:
    """Whether $TCINSPECT_IN_PROCESS asks every capture to compile in tcinspect's own process (the test suite's)."""
    return os.environ.get(IN_PROCESS_ENV, "") not in ("", "0")


def start(argv: list[str]) -> None:
    """Start the capture's child now, where ``argv`` asks for a capture (``wanted``)."""
    if _warm or not wanted(argv):
        return
    try:
        directory = Path(tempfile.mkdtemp(prefix="tcinspect-child-"))
        env = dict(os.environ)
        read, go = os.pipe()
        output = open(directory / "output.txt", "w+b")  # noqa: SIM115 - the capture reads it back, then closes it
        try:
            # as isolate.capture_isolated starts its child: its own session, its output to a file, the user's stdin
            proc = subprocess.Popen(
                [sys.executable, "-m", "tcinspect.capturing.isolate", "--ready", str(directory), str(read)],
                env=dict(env, TCINSPECT_EVENTS_FILE=str(directory / "events.jsonl")), stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(read,))
        finally:
            os.close(read)
    except OSError:
        return  # nothing started ahead: the capture starts its child itself
    _warm.append(Warm(proc, directory, output, go, env, os.getcwd()))


def take() -> Optional[Warm]:
    """The child started ahead, for the capture to use, if this process still runs as it did when it started it
    (the same environment and working directory); else None (and it is stopped)."""
    if not _warm:
        return None
    warm = _warm.pop()
    if warm.proc.poll() is None and dict(os.environ) == warm.env and os.getcwd() == warm.cwd:
        return warm
    _stop(warm)
    return None


def discard() -> None:
    """Stop a child started ahead that no capture took (at exit)."""
    while _warm:
        _stop(_warm.pop())


def _stop(warm: Warm) -> None:
    try:
        os.killpg(warm.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    warm.proc.wait()
    try:
        os.close(warm.go)
    except OSError:  # closed already
        pass
    warm.output.close()
    shutil.rmtree(warm.directory, ignore_errors=True)
