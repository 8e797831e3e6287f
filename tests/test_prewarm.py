"""The capture's child started before the command line is parsed (capturing/prewarm.py): started only for a capture,
taken only while nothing it was started with has changed, stopped when no capture takes it, and the child a
capture then runs in."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import ROOT, SAMPLES
from tcinspect.capturing import prewarm

TINY = str(SAMPLES / "tiny.py")


@pytest.fixture(autouse=True)
def _no_child_left(monkeypatch, tmp_path):
    monkeypatch.delenv("TCINSPECT_IN_PROCESS", raising=False)
    monkeypatch.delenv(prewarm.OFF_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the child's directory: here, where the test can look
    yield
    prewarm.discard()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_only_a_capture_of_a_model_file_in_a_child_is_started_ahead(monkeypatch):
    assert prewarm.wanted(["trace", TINY])
    assert prewarm.wanted(["check", TINY, "--max-graph-breaks", "0", "--timeout=60"])
    assert prewarm.wanted(["breaks", "--backend", "aot_eager", TINY])
    assert not prewarm.wanted(["trace", "report.yaml"])  # a saved report: nothing compiles
    assert not prewarm.wanted(["trace", str(SAMPLES / "no_such_model.py")])
    assert not prewarm.wanted(["diff", TINY, TINY])  # not a capturing command
    assert not prewarm.wanted(["trace", TINY, "--help"])
    assert not prewarm.wanted(["trace", TINY, "--debug"])  # --debug compiles in this process
    assert not prewarm.wanted(["trace", TINY, "--nproc=2"])  # ranks, each its own launcher
    assert not prewarm.wanted([])
    monkeypatch.setenv(prewarm.OFF_ENV, "1")
    assert not prewarm.wanted(["trace", TINY])
    monkeypatch.delenv(prewarm.OFF_ENV)
    monkeypatch.setenv("TCINSPECT_IN_PROCESS", "1")  # the capture runs in this process: no child at all
    assert not prewarm.wanted(["trace", TINY])


@pytest.mark.torch  # the child it starts imports torch
def test_a_child_no_capture_takes_is_stopped_with_its_directory(tmp_path):
    prewarm.start(["trace", TINY])
    (warm,) = prewarm._warm
    assert warm.directory.parent == tmp_path and _alive(warm.proc.pid)
    prewarm.start(["trace", TINY])  # one child at most
    assert len(prewarm._warm) == 1
    prewarm.discard()
    assert warm.proc.returncode is not None and not warm.directory.exists()
    assert not list(tmp_path.glob("tcinspect-child-*"))


@pytest.mark.torch  # the child it starts imports torch
def test_a_child_is_not_taken_once_the_environment_it_started_with_changed(monkeypatch, tmp_path):
    prewarm.start(["trace", TINY])
    (warm,) = prewarm._warm
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "another"))  # torch reads it as it imports
    assert prewarm.take() is None
    assert warm.proc.returncode is not None and not warm.directory.exists()


@pytest.mark.torch  # the child it starts imports torch
def test_a_child_whose_parent_went_away_ends_without_compiling(tmp_path):
    """The pipe it waits on closes with its parent: the child ends once its imports are done, writing nothing."""
    prewarm.start(["trace", TINY])
    (warm,) = prewarm._warm
    prewarm._warm.clear()
    os.close(warm.go)  # as the parent's exit closes it
    assert warm.proc.wait(timeout=120) == 0
    assert not (warm.directory / "result.json").exists()
    warm.output.close()


@pytest.mark.torch
def test_the_capture_runs_in_the_child_started_ahead(monkeypatch, tmp_path):
    """`python -m tcinspect trace` on a model file: the capture's child is the one started before the command line
    was read (no second one is started), and its report is the model's."""
    from tcinspect.capturing import isolate, modelfile
    from tcinspect.report import Request

    started = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    prewarm.start(["trace", TINY])
    (warm,) = prewarm._warm
    monkeypatch.setattr(isolate.subprocess, "Popen", popen)
    request = Request(file=TINY)
    rep = isolate.capture_isolated(request, modelfile.read(TINY))
    assert started == []  # the child started ahead compiled it
    assert rep.ok and len(rep.stages.dynamo.graphs) == 1 and rep.stages.inductor.outputs
    assert not warm.directory.exists() and not prewarm._warm


@pytest.mark.torch
def test_the_command_line_leaves_no_child_and_no_directory(tmp_path):
    """A real `python -m tcinspect trace` (its child started ahead), then the same file again (its report reused: the
    child started ahead is stopped): each ends with no tcinspect process and no child directory left."""
    env = dict(os.environ, TCINSPECT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"),
               TMPDIR=str(tmp_path))
    for _ in range(2):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "tcinspect", "trace", TINY, "--stage", "summary"], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert "graphs                         1" in done.stdout
        assert time.monotonic() - started < 600
        assert not list(tmp_path.glob("tcinspect-child-*"))
    assert "reusing the current report" in done.stderr


@pytest.mark.torch
def test_a_child_that_ended_after_it_was_taken_is_replaced(monkeypatch, tmp_path):
    """The child started ahead ends between being taken and being told to go: the capture starts its own child in the
    same directory, as it would have without one, and reports the model (not a crash)."""
    from tcinspect.capturing import isolate, modelfile
    from tcinspect.report import Request

    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    prewarm.start(["trace", TINY])
    warm = prewarm.take()
    assert warm is not None
    os.killpg(warm.proc.pid, 9)
    warm.proc.wait()
    monkeypatch.setattr(prewarm, "take", lambda: warm)
    started = []
    real = subprocess.Popen
    monkeypatch.setattr(isolate.subprocess, "Popen", lambda *a, **kw: started.append(a[0]) or real(*a, **kw))
    rep = isolate.capture_isolated(Request(file=TINY), modelfile.read(TINY))
    assert len(started) == 1 and str(warm.directory) in started[0]
    assert rep.ok and len(rep.stages.dynamo.graphs) == 1
    assert not warm.directory.exists()
