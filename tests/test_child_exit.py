"""A capture's process ends as Python's exit would end it (collector.finish_before_exit): threads joined, atexit
callbacks run, what they kept alive freed, files left open flushed. Only the cycle collector's walk of torch's heap
is skipped. Checked on the isolated child (model file and script), and on a capture in the CLI's own process."""

from __future__ import annotations

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
def test_what_the_model_left_for_its_exit_is_done(tmp_path, how):
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, LEAVES_DIR=str(out), TCINSPECT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT / "src"), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "tcinspect", "trace", str(MODEL), "--backend", "eager",
                           "--stage", "summary", *how], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "graphs                         1" in done.stdout
    assert {p.name: p.read_text() for p in out.iterdir()} == EXPECTED


def test_the_exit_is_pythons_own_where_a_hook_is_missing(monkeypatch):
    import atexit
    import gc
    import threading

    from tcinspect import collector

    froze = []
    monkeypatch.setattr(gc, "freeze", lambda: froze.append(True))
    monkeypatch.delattr(threading, "_shutdown")
    ran = []
    atexit.register(ran.append, "callback")
    try:
        collector.finish_before_exit()
        assert not froze and not ran  # nothing done ahead: the interpreter's exit runs the callback
    finally:
        atexit.unregister(ran.append)
