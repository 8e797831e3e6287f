"""Misuse that must never hurt the user: interrupts, the cache's paths, and the small CLI contracts.

The interrupt tests send real signals to a real `tcinspect trace` subprocess while it compiles, and
look for every process it started (by an environment tag only they inherit) after it has ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers import DATA, MODELS, ROOT, cli
from tcinspect import cache, interrupts, serialize
from tcinspect.analysis.check.outcome import Finding, Outcome
from tcinspect.errors import ExitCode
from tcinspect.render import checks as render_checks
from test_report_io import hand_built


def _tagged_processes(tag: str) -> list[str]:
    """Processes whose environment holds ``tag``: everything the tcinspect under test started."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if tag.encode() in (d / "environ").read_bytes():
                    found.append(f"{d.name}: {(d / 'cmdline').read_bytes()[:120]!r}")
            except OSError:
                pass
    return found


def _interrupt_trace(tmp_path: Path, sig: signal.Signals, in_process: bool) -> tuple[int, str, float, list[str]]:
    """Start `tcinspect trace` on a model (cold compile), send ``sig`` once it compiles; its exit code, stderr,
    seconds from the signal to its exit, and the processes it left behind."""
    tag = uuid.uuid4().hex
    mark = tmp_path / "compiling"
    env = dict(os.environ, TCINSPECT_TEST_MARK=str(mark), TCINSPECT_TEST_TAG=tag,
               TCINSPECT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"))
    env.pop("TCINSPECT_IN_PROCESS", None)
    if in_process:
        env["TCINSPECT_IN_PROCESS"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "tcinspect", "trace", str(MODELS / "marks_compile.py"), "--fresh",
                             "-o", str(tmp_path / "out" / "report.yaml")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    (tmp_path / "out").mkdir()
    deadline = time.monotonic() + 120
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    time.sleep(1.0)  # into Dynamo / Inductor
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    time.sleep(0.5)
    return proc.returncode, err, took, _tagged_processes(tag)


@pytest.mark.parametrize("sig,in_process", [(signal.SIGINT, False), (signal.SIGINT, True),
                                            (signal.SIGTERM, False), (signal.SIGTERM, True)],
                         ids=["sigint-child", "sigint-in-process", "sigterm-child", "sigterm-in-process"])
@pytest.mark.torch
def test_a_signal_while_compiling_stops_everything(tmp_path, sig, in_process):
    code, err, took, left = _interrupt_trace(tmp_path, sig, in_process)
    assert code == 128 + sig == (ExitCode.INTERRUPTED if sig == signal.SIGINT else ExitCode.TERMINATED), err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == [f"tcinspect: interrupted ({sig.name})"], err
    assert took < interrupts.GRACE_S + 2, took
    assert left == []  # the child, its compile workers, g++: all gone
    assert list((tmp_path / "out").iterdir()) == []  # no report, no temporary file


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_an_interrupt_swallowed_in_a_weakref_callback_is_delivered_again():
    # torch's weak-key caches run Python callbacks whose exceptions Python drops ("Exception ignored in")
    proc = _python("""
        import gc, os, signal, time, weakref
        from tcinspect import interrupts
        from tcinspect.errors import Interrupted

        class Key: pass

        def callback(ref):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs (and raises) here, inside the callback
                pass

        start = time.monotonic()
        try:
            with interrupts.handled():
                k = Key(); r = weakref.ref(k, callback); del k; gc.collect()
                while time.monotonic() - start < 20:
                    time.sleep(0.01)
                print("not interrupted")
        except Interrupted as exc:
            print("interrupted", exc.signum, round(time.monotonic() - start, 1))
    """)
    assert proc.stdout.startswith("interrupted 2 "), (proc.stdout, proc.stderr)
    assert float(proc.stdout.split()[2]) < 1.0  # delivered again at once, not by the watchdog
    assert "Exception ignored" not in proc.stderr and proc.returncode == 0


def test_the_watchdog_ends_a_process_that_swallows_every_interrupt(tmp_path):
    owned = tmp_path / ".report.yaml.tmp"
    proc = _python(f"""
        import os, signal, subprocess, time
        from tcinspect import interrupts
        interrupts.GRACE_S = 1.0
        child = subprocess.Popen(["sleep", "60"], start_new_session=True, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        open({str(owned)!r}, "w").close()
        interrupts.own({str(owned)!r})
        with interrupts.handled(), interrupts.cleanup(lambda: os.killpg(child.pid, signal.SIGKILL)):
            print(child.pid, flush=True)
            signalled = False
            while True:  # code that catches everything, as some of torch does
                try:
                    if not signalled:
                        signalled = True
                        os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.05)
                except BaseException:
                    pass
    """)
    assert proc.returncode == 143 and proc.stderr.strip() == "tcinspect: interrupted (SIGTERM)", proc
    assert not owned.exists()
    child = int(proc.stdout.split()[0])
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_the_cache_never_replaces_what_it_does_not_own(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.py"
    model.write_text("model = None\n")
    rep = hand_built()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / ".gitignore").symlink_to(tmp_path / "elsewhere")  # someone else's: left alone
    blocked = cache._entry_path(model, "k1")
    blocked.mkdir()  # an entry's name taken by a directory: a warning, never replaced
    assert cache.store(model, "k1", rep) is None
    assert blocked.is_dir() and "is a directory" in caplog.text
    assert (tmp_path / "cache" / ".gitignore").is_symlink() and not (tmp_path / "elsewhere").exists()
    target = tmp_path / "entries" / "k2.json"
    target.parent.mkdir()
    cache._entry_path(model, "k2").symlink_to(target)  # an entry that is a link: its target is written
    assert cache.store(model, "k2", rep) == cache._entry_path(model, "k2")
    assert cache._entry_path(model, "k2").is_symlink() and target.is_file()
    assert cache.lookup(model, ["k2"]).report == rep


def test_version_does_not_import_torch():
    proc = _python("""
        import sys
        from tcinspect.cli import main
        code = main(["--version"])
        sys.exit(code or ("torch" in sys.modules) * 9)
    """)
    from tcinspect import __version__

    assert proc.returncode == 0 and proc.stdout == f"tcinspect {__version__}\n", proc


def test_help_lists_the_interrupt_exit_codes(capsys):
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "130 interrupted" in out and "143" in out
    readme = (ROOT / "README.md").read_text()
    assert "| 130 |" in readme and "| 143 |" in readme


def test_a_format_typo_suggests_the_format_meant(capsys, tmp_path):
    saved = tmp_path / "r.yaml"
    saved.write_text(serialize.dumps(hand_built(), "yaml"))
    code, out, err = cli(capsys, "trace", str(saved), "--format", "yml")
    assert code == 2 and out == ""
    assert err.strip() == ("tcinspect: error: --format 'yml' is not one of table, yaml, json, html, svg — "
                           "pass --format yaml")


def test_an_extra_argument_after_a_saved_report_is_refused(capsys, tmp_path):
    saved = tmp_path / "r.yaml"
    saved.write_text(serialize.dumps(hand_built(), "yaml"))
    code, out, err = cli(capsys, "guards", str(saved), "other.yaml")
    assert code == 2 and out == "" and err.count("\n") == 1 and "unexpected argument 'other.yaml'" in err


def test_junit_names_stay_the_same_when_the_measured_values_change():
    def outcome(breaks: int) -> Outcome:
        return Outcome(findings=[
            Finding("m.py", "graph_breaks", "fail", f"graph_breaks {breaks} > max 1"),
            Finding("m.py", "new graph break", "fail", f"new graph break ({breaks})", "m.py", 7),
            Finding("m.py", "new graph break", "fail", "another", "m.py", 7),
        ])

    def cases(xml: str) -> list[tuple[str, str, str]]:
        root = ET.fromstring(xml.split("?>", 1)[1])
        return [(c.get("classname"), c.get("name"),
                 next(p.get("value") for p in c.iter("property") if p.get("name") == "message"))
                for c in root.iter("testcase")]

    a, b = cases(render_checks.junit(outcome(3))), cases(render_checks.junit(outcome(4)))
    assert [x[:2] for x in a] == [x[:2] for x in b]  # stable names
    assert len({x[1] for x in a}) == 3  # and unique ones
    assert a[0][2] == "graph_breaks 3 > max 1" and b[0][2] == "graph_breaks 4 > max 1"  # the values, kept


@pytest.mark.torch
def test_a_bug_in_the_capture_process_is_an_internal_error_not_a_crash(tmp_path):
    import json

    model = MODELS / "takes_no_arguments.py"
    (tmp_path / "request.json").write_text(json.dumps({"file": str(model), "compile": {"no_such_option": 1}}))
    (tmp_path / "source.py").write_bytes(model.read_bytes())
    # the child's own entry point, as capture_isolated starts it (its directory: request.json and source.py)
    proc = subprocess.run([sys.executable, "-m", "tcinspect.capturing.isolate", str(tmp_path)], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "result.json").read_text())
    assert "no_such_option" in data["internal"] and "Traceback" in data["internal"]


def test_a_bug_in_tcinspect_is_exit_70_with_its_traceback_and_one_line(tmp_path):
    # the real CLI (python -m tcinspect's main) on a TORCH_TRACE log, with one of its steps raising as a bug would:
    # the traceback, then one line saying it is tcinspect's bug, exit 70 (docs/errors.md), nothing on stdout
    log = DATA / "torch_trace" / "torch-2.13.0" / "graph_breaks.log.gz"
    program = ("import sys\n"
               "import tcinspect.cli.breaks as command\n"
               "def broken(*args, **kwargs):\n"
               "    raise RuntimeError('a bug on purpose')\n"
               "command.breaks_document = broken\n"
               "from tcinspect.cli import main\n"
               f"sys.exit(main(['breaks', {str(log)!r}, '--format', 'json']))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "TCINSPECT_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == int(ExitCode.INTERNAL_ERROR) == 70
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "tcinspect: internal error (the traceback above is a bug in tcinspect; please report it)"
    assert "Traceback (most recent call last)" in done.stderr and "RuntimeError: a bug on purpose" in done.stderr
