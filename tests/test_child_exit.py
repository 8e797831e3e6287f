"""A capture's process ends as Python's exit would end it (collector.finish_before_exit): threads joined, atexit
callbacks run, what they kept alive freed, files left open flushed. Only the cycle collector's walk of torch's heap
is skipped. Checked on the isolated child (model file and script), and on a capture in the CLI's own process. And
the child's output holds no marker line of the profiler tcinspect ran (capturing/_compat/profiler.markers_dropped)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from helpers import ROOT

MODEL = ROOT / "tests" / "models" / "leaves_at_exit.py"
EXPECTED = {
    "open.txt": "written, never closed\n",
    "atexit.txt": "atexit ran, Cycle still alive\n",
    "del.txt": "collected\n",
    "thread.txt": "thread done\n",
    "pool.txt": "pool task done\n",
}


@pytest.mark.torch
@pytest.mark.parametrize("how", [[], ["--script"], ["--debug"]], ids=["model file", "script", "in process"])
def test_what_the_model_left_for_its_exit_is_done(tmp_path, monkeypatch, how):
    monkeypatch.delenv("TCINSPECT_IN_PROCESS", raising=False)  # the CLI's default: an isolated child (unless --debug)
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, LEAVES_DIR=str(out), TCINSPECT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT / "src"), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "tcinspect", "trace", str(MODEL), "--backend", "eager",
                           "--stage", "summary", *how], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "graphs                         1" in done.stdout
    assert {p.name: p.read_text() for p in out.iterdir()} == EXPECTED
    if "--debug" not in how:  # the child's output, forwarded: no marker of the profiler tcinspect ran
        assert "] profiler_start" not in done.stderr and "] profiler_stop" not in done.stderr


@pytest.mark.parametrize("why", ["a hook is missing", "a nanobind extension is loaded"])
def test_the_exit_is_pythons_own(monkeypatch, why):
    """Where this Python lacks ``threading._shutdown``, or where nanobind is loaded (Triton 3.9's bindings, which torch
    2.15 imports: it reports every object of its still alive as its module is finalized, and a frozen heap printed that
    report on every capture; test_misuse's in-process signal cases on torch 2.15 saw it), nothing is done ahead."""
    import atexit
    import gc
    import threading

    from tcinspect import collector

    froze = []
    monkeypatch.setattr(gc, "freeze", lambda: froze.append(True))
    if why == "a hook is missing":
        monkeypatch.delattr(threading, "_shutdown")
    else:
        monkeypatch.setattr(collector, "_nanobind_loaded", lambda: True)
    ran = []
    atexit.register(ran.append, "callback")
    try:
        collector.finish_before_exit()
        assert not froze and not ran  # nothing done ahead: the interpreter's exit runs the callback
    finally:
        atexit.unregister(ran.append)


@contextlib.contextmanager
def _stderr_to(path, mode: int):
    """File descriptor 2 on ``path`` (opened with ``mode``) for the block, then back."""
    saved = os.dup(2)
    fd = os.open(path, mode, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


MARKERS = (b"USDT:2026-12-02 02:18:32 30682:30682 SyncActivityProfilerHandler.cpp:52] profiler_start\n",
           b"USDT:2026-12-02 02:18:32 30682:30682 SyncActivityProfilerHandler.cpp:59] profiler_stop\n")


@pytest.mark.torch
def test_only_kinetos_marker_lines_of_tcinspects_own_profiler_run_are_dropped(tmp_path):
    import torch

    from tcinspect.capturing import _compat

    err = tmp_path / "output.txt"
    with _stderr_to(err, os.O_RDWR | os.O_CREAT | os.O_TRUNC):  # as an isolated capture's output file
        os.write(2, b"before\n" + MARKERS[0])  # a marker before the block is the user's: it stays
        with _compat.profiler.markers_dropped():
            os.write(2, MARKERS[0] + b"the model's own line, USDT: profiler_start in it\n" + MARKERS[1])
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                torch.ones(3).sum()
        os.write(2, b"after\n")
    out = err.read_bytes()
    kept = b"before\n" + MARKERS[0] + b"the model's own line, USDT: profiler_start in it\n"
    assert out.startswith(kept) and out.endswith(b"after\n")
    # the markers are gone; any other line Kineto wrote stays (torch 2.15's CUDA build on a machine without a GPU:
    # "ERROR:... DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35")
    rest = out[len(kept):-len(b"after\n")]
    assert b"] profiler_start" not in rest and b"] profiler_stop" not in rest
    assert all(line.startswith(b"ERROR:") for line in rest.splitlines()), rest

    appended = tmp_path / "rank.log"  # a rank's log is opened for appending only: it is left as written
    with _stderr_to(appended, os.O_WRONLY | os.O_CREAT | os.O_APPEND), _compat.profiler.markers_dropped():
        os.write(2, MARKERS[0])
    assert appended.read_bytes() == MARKERS[0]
