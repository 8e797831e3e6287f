"""The library's front door: ``tcinspect.obtain(Request)``, the split options, and exit codes from typed failures."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from helpers import DATA, SAMPLES, cli, make_report
from tcinspect import serialize
from tcinspect.errors import ExitCode, exit_code_for
from tcinspect.report import (
    FAILURE_KINDS,
    BenchRequest,
    CompileOptions,
    ExportRequest,
    Failure,
    Options,
    Report,
    Target,
    VerifyRequest,
)
from tcinspect.request import Request, obtain

LOG = DATA / "torch_trace" / "torch-2.13.0" / "tiny.log.gz"


def test_the_public_api_is_complete_and_lazy():
    # __all__ names every public name, each resolves, and importing the package or its data classes
    # does not import torch
    code = ("import sys, tcinspect\n"
            "public = sorted(n for n in tcinspect.__all__)\n"
            "missing = [n for n in public if getattr(tcinspect, n, None) is None]\n"
            "defined = sorted(n for n, v in vars(tcinspect).items() if callable(v) and not n.startswith('_')\n"
            "                 and getattr(v, '__module__', '') == 'tcinspect')\n"
            "print(missing, [n for n in defined if n not in public], sorted(tcinspect._LAZY.keys() - set(public)),\n"
            "      'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] [] [] False"


def test_options_are_the_compile_options_and_the_requests():
    compile_options = CompileOptions(backend="aot_eager", dynamic="true", device="cuda", passes=("p.py:f",))
    verify, export, bench = VerifyRequest(1e-3, None), ExportRequest(("strict",), (0,), True), BenchRequest(20, "max-autotune")
    opts = Options.of(compile_options, verify, export, bench)
    assert (opts.compile, opts.verify_request, opts.export_request, opts.bench_request) == (
        compile_options, verify, export, bench)
    # the report keeps recording them flat, as schema 1 has them
    assert (opts.verify, opts.rtol, opts.export, opts.aoti, opts.bench, opts.try_mode) == (
        True, 1e-3, ("strict",), True, 20, "max-autotune")
    plain = Options.of(compile_options)
    assert plain == Options(backend="aot_eager", dynamic="true", device="cuda", passes=("p.py:f",))
    assert (plain.verify_request, plain.export_request, plain.bench_request) == (None, None, None)
    assert Request(file="m.py", compile=compile_options, bench=bench).options == Options.of(compile_options, bench=bench)


def test_user_code_is_typed_not_guessed_per_caller():
    assert CompileOptions(backend="m.py:my_backend").runs_user_code
    assert CompileOptions(passes=("passes:fuse",)).runs_user_code
    assert not CompileOptions(backend="aot_eager").runs_user_code


def test_obtain_reads_a_torch_trace_log_without_torch():
    code = ("import sys, tcinspect\n"
            f"rep = tcinspect.obtain(tcinspect.Request(file={str(LOG)!r}))\n"
            "print(rep.ok, rep.failure, rep.summary.graphs, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True None 1 False"


def test_obtain_is_the_report_the_cli_shows(tmp_path, capsys):
    saved = tmp_path / "tiny.json"
    code, _, err = cli(capsys, "trace", str(LOG), "-o", str(saved))
    assert code == 0, err
    assert obtain(Request(file=str(LOG))) == serialize.load(saved) == obtain(Request(file=str(saved)))


def _failed(kind: str, error: str) -> Report:
    return make_report(error=error,
                       failure=Failure(kind, error, "the fix"))


@pytest.mark.parametrize("kind, code", [("stage", ExitCode.STAGE_FAILED), ("user_target", ExitCode.USAGE_ERROR),
                                        ("crashed", ExitCode.CAPTURE_CRASHED), ("rank_error", ExitCode.USAGE_ERROR)])
def test_the_exit_code_comes_from_the_failure_kind_not_the_words(tmp_path, capsys, kind, code):
    # the error's wording says "--backend" every time: only the typed kind decides the exit code
    saved = tmp_path / "failed.yaml"
    saved.write_text(serialize.dumps(_failed(kind, "--backend 'm.py:b' raised ValueError: boom"), "yaml"))
    got, out, err = cli(capsys, "trace", str(saved), "--stage", "summary")
    assert got == code == exit_code_for(kind)
    assert "Summary" in out  # the report is shown first, then the failure ends the command
    assert err.strip().splitlines()[-1] == "tcinspect: error: --backend 'm.py:b' raised ValueError: boom — the fix"


def test_every_failure_kind_has_an_exit_code():
    assert {k: exit_code_for(k) for k in FAILURE_KINDS} == {
        "stage": 3, "user_target": 2, "crashed": 4, "rank_error": 2}
    assert exit_code_for("from a newer tcinspect") == ExitCode.STAGE_FAILED


def test_a_report_saved_before_failures_were_typed_reads_as_it_did(tmp_path, capsys):
    saved = tmp_path / "old.yaml"
    saved.write_text(serialize.dumps(replace(_failed("stage", "inductor stage failed: boom"), failure=None), "yaml"))
    assert "\nfailure:" not in saved.read_text()  # no failure section (backend_failures is another key)
    got, _, err = cli(capsys, "trace", str(saved), "--stage", "summary")
    assert got == 0, err


@pytest.mark.torch
def test_a_failed_capture_is_a_report_with_a_typed_failure(tmp_path):
    # a --backend of the user's that raises: kind user_target (exit 2), not a failed compiler stage
    backend = tmp_path / "bad_backend.py"
    backend.write_text("def backend(gm, example_inputs):\n    raise ValueError('boom')\n")
    rep = obtain(Request(file=str(SAMPLES / "tiny.py"), compile=CompileOptions(backend=f"{backend}:backend"),
                         isolate=False, fresh=True))
    assert not rep.ok and rep.failure is not None
    assert rep.failure.kind == "user_target" and rep.failure.cause == rep.error
    assert rep.failure.fix.startswith("fix that target")


def test_a_failed_log_ends_with_its_failure_even_under_strict(tmp_path, monkeypatch, capsys):
    # a log of a failed compile that is also damaged: --strict does not hide the failure behind exit 2
    from tcinspect.parse import torchtrace
    from tcinspect.report import ParseHealth

    log = tmp_path / "dedicated_log_torch_trace_x.log"
    log.write_text("")
    failed = make_report(target=Target(kind="torch_trace", path=str(log)),
                         error="inductor stage failed: boom", parse=ParseHealth(lines_not_understood=2))
    monkeypatch.setattr(torchtrace, "read", lambda file, rank=None, jobs=None: failed)
    got, _, err = cli(capsys, "trace", str(log), "--strict", "--stage", "summary")
    assert got == ExitCode.STAGE_FAILED, err
    assert err.strip().splitlines()[-1] == (
        "tcinspect: error: inductor stage failed: boom — the log shows the stages that worked before it")
    # the same log without the failure: --strict refuses what the parser did not understand
    monkeypatch.setattr(torchtrace, "read", lambda file, rank=None, jobs=None: replace(failed, error=""))
    got, _, err = cli(capsys, "trace", str(log), "--strict", "--stage", "summary")
    assert got == ExitCode.USAGE_ERROR and "--strict fails on anything" in err
