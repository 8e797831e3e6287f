"""Running one timed command for bench/run.py: wall seconds and the child's own peak RSS, in an environment
scrubbed of everything that would change what a compile does or costs, in temporary directories."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Environment that would change what a compile does or costs; never inherited by a timed run.
_SCRUB_ENV = (
    "TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE",
    "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_FORCE_DISABLE_CACHES",
    "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE", "TCINSPECT_CACHE_DIR",
    "TORCH_COMPILE_DEBUG_DIR",
)


class BenchError(RuntimeError):
    pass


@dataclass
class RunResult:
    seconds: float
    maxrss_kb: int
    stdout: str
    stderr: str
    returncode: int


def run_once(cmd: Sequence[str], env: dict, cwd: Path, timeout: float,
             ok_codes: Sequence[int] = (0,), label: str = "") -> RunResult:
    """Run ``cmd`` once; wall seconds (perf_counter around spawn..reap) and the child's peak RSS.

    stdout/stderr go to files (no pipe can fill up and stall the child). The child is reaped with
    ``os.wait4`` so its resource usage is its own, not the sum of all children so far.
    """
    with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err:
        reaped: dict = {}
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), env=env, cwd=str(cwd), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)

        def reap() -> None:
            _, status, usage = os.wait4(proc.pid, 0)
            reaped["end"] = time.perf_counter()
            reaped["status"] = status
            reaped["usage"] = usage

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        waiter.join(timeout)
        if waiter.is_alive():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            waiter.join(30)
            proc.returncode = -9
            raise BenchError(f"{label or 'command'} timed out after {timeout:.0f} s: {show(cmd)}\n"
                             + _tail(_read(err)))
        code = os.waitstatus_to_exitcode(reaped["status"])
        proc.returncode = code  # we reaped it ourselves; keep Popen from trying again
        stdout, stderr = _read(out), _read(err)
    if code not in ok_codes:
        raise BenchError(f"{label or 'command'} failed with exit code {code}: {show(cmd)}\n"
                         f"--- last lines of its stderr ---\n{_tail(stderr or stdout)}")
    return RunResult(reaped["end"] - start, int(reaped["usage"].ru_maxrss), stdout, stderr, code)


def _read(f) -> str:
    f.seek(0)
    return f.read().decode("utf-8", "replace")


def _tail(text: str, n: int = 25) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:]) if lines else "(empty)"


def show(cmd: Sequence[str]) -> str:
    return " ".join(("python" if c == sys.executable else c) for c in cmd)


class Dirs:
    """Temporary directories, all under one root that is removed at the end."""

    def __init__(self, keep: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tcinspect-bench-"))
        self.keep = keep
        self.cwd = self.root / "cwd"
        self.cwd.mkdir()
        self._n = 0

    def new(self, prefix: str) -> Path:
        self._n += 1
        d = self.root / f"{prefix}-{self._n}"
        d.mkdir()
        return d

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def base_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB_ENV}
    # an installed tcinspect reads its modules' bytecode from the cache: a shell that turns writing it off would
    # have every timed run compile every module from source (0.3-0.4 s a command here)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def inductor_env(env: dict, inductor_dir: Path) -> dict:
    env = dict(env)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_dir)
    env["TRITON_CACHE_DIR"] = str(inductor_dir / "triton")
    return env
