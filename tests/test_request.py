"""The library's front door: ``tcinspect.obtain(Request)``, the split options, and exit codes from typed failures."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from builders.reports import make_report
from helpers import DATA, SAMPLES, cli
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
    from tcinspect.parse import rankpool
    from tcinspect.report import ParseHealth

    log = tmp_path / "dedicated_log_torch_trace_x.log"
    log.write_text("")
    failed = make_report(target=Target(kind="torch_trace", path=str(log)),
                         error="inductor stage failed: boom", parse=ParseHealth(lines_not_understood=2))
    monkeypatch.setattr(rankpool, "read", lambda file, rank=None, jobs=None: failed)
    got, _, err = cli(capsys, "trace", str(log), "--strict", "--stage", "summary")
    assert got == ExitCode.STAGE_FAILED, err
    assert err.strip().splitlines()[-1] == (
        "tcinspect: error: inductor stage failed: boom — the log shows the stages that worked before it")
    # the same log without the failure: --strict refuses what the parser did not understand
    monkeypatch.setattr(rankpool, "read", lambda file, rank=None, jobs=None: replace(failed, error=""))
    got, _, err = cli(capsys, "trace", str(log), "--strict", "--stage", "summary")
    assert got == ExitCode.USAGE_ERROR and "--strict fails on anything" in err


# ----------------------------------------------------------------------------- one Request, checked when built


@pytest.mark.parametrize("bad, words", [
    (dict(dynamic="maybe"), "dynamic='maybe' is not True, False or None"),
    (dict(dynamic=1), "dynamic=1 is not True, False or None"),
    (dict(device="tpu"), "device='tpu' is not cpu or cuda"),
    (dict(passes="p.py:f"), "passes='p.py:f' is not a tuple"),
])
def test_compile_options_are_checked_when_built_not_in_the_capture(bad, words):
    from tcinspect.errors import UsageError

    with pytest.raises(UsageError) as caught:
        CompileOptions(**bad)
    assert caught.value.cause.startswith(words) and caught.value.exit_code == ExitCode.USAGE_ERROR
    assert CompileOptions(dynamic="true", device="cuda:1").dynamic == "true"


def test_a_request_that_contradicts_itself_fails_when_built():
    from tcinspect.errors import UsageError

    # in Python's words (the CLI says the same of its options: tests/test_notebook.py)
    with pytest.raises(UsageError, match="script=True runs the file as a script and model_name='net'"):
        Request(file="m.py", script=True, model_name="net")
    with pytest.raises(UsageError, match=r"CompileOptions\(mode='max-autotune'\) configures Inductor's own backend"):
        Request(file="m.py", compile=CompileOptions(backend="b.py:fn", mode="max-autotune"))
    assert (Request(script=True).as_script, Request(model_name="net").as_script, Request().as_script) == (
        True, False, None)
    assert (Request().model, Request(model_name="net").model) == ("model", "net")


def test_a_request_goes_to_the_child_whole_and_typed():
    full = Request(file="m.py", compile=CompileOptions(backend="aot_eager", dynamic="false", passes=("p.py:f",)),
                   verify=VerifyRequest(1e-3, None), export=ExportRequest(("strict",), (0, 1), True),
                   bench=BenchRequest(20, "max-autotune"), model_name="net", script_args=("--x", "1"), nproc=2,
                   launcher_args=("--master-port=1",), timeout=5.0, per_call=3,
                   also_accept=(Options(backend="inductor"),))
    back = Request.from_json(full.to_json())
    assert back == full and back.also_accept == full.also_accept
    assert isinstance(back.export, ExportRequest) and back.export.dynamic_dims == (0, 1)
    assert isinstance(back.compile.passes, tuple) and isinstance(back.also_accept[0], Options)
    assert Request.from_json(Request().to_json()) == Request()
    # what every command builds from its options, none given, goes to the child the same way
    from tcinspect.cli import common

    built = common.Capture({n: d for n, (_, d) in common.CAPTURE_OPTIONS.items()}).request("m.py")
    assert Request.from_json(built.to_json()) == built == Request(file="m.py")
    assert Request(launcher_args=None, script_args=["a"]).script_args == ("a",)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no field 'as_script'"):
        Request.from_json('{"file": "m.py", "as_script": true}')


def test_the_model_file_is_read_once_and_the_capture_gets_the_request_whole(tmp_path, monkeypatch):
    from pathlib import Path

    from tcinspect.capturing import engine, modelfile
    from tcinspect.request import obtained

    model = tmp_path / "m.py"
    model.write_text("model = None\nexample_inputs = ()\n")
    reads: list = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    got: list = []

    def capture_file(request, source=None):
        got.append((request, source))
        return _failed("stage", "boom").replace(error="", failure=None)

    monkeypatch.setattr(engine, "capture_file", capture_file)
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    request = Request(file=str(model), compile=CompileOptions(backend="eager"), isolate=False, fresh=True)
    obtained(request)
    assert [r for r in reads if r.name == "m.py"] == [model]  # read (and hashed) once
    assert got[0][0] == request and isinstance(got[0][1], modelfile.ModelSource)
    assert got[0][1].sha256 == __import__("hashlib").sha256(model.read_bytes()).hexdigest()


def test_the_capture_child_builds_the_request_back_and_compiles_the_bytes_read(tmp_path, monkeypatch):
    import json

    from tcinspect.capturing import engine, isolate

    request = Request(file=str(tmp_path / "gone.py"), compile=CompileOptions(backend="eager"), model_name="net")
    (tmp_path / "request.json").write_text(request.to_json())
    (tmp_path / "source.py").write_bytes(b"net = None\nexample_inputs = ()\n")
    got: list = []
    monkeypatch.setattr(engine, "capture_file",
                        lambda r, source=None, recorded=None: got.append((r, source)) or _failed("stage", "x"))
    assert isolate._child(str(tmp_path)) == 0
    assert "report" in json.loads((tmp_path / "result.json").read_text())
    (r, source), = got
    # the file is gone: the child compiles the bytes its parent read, never the path again
    assert r == request and source.text == "net = None\nexample_inputs = ()\n" and not source.is_script


# ----------------------------------------------------------------------------- commands: one meaning per flag


def test_a_renamed_option_keeps_its_old_spelling_for_one_release_with_a_warning(capsys):
    old = cli(capsys, "breaks", str(LOG), "--fullgraph")
    new = cli(capsys, "breaks", str(LOG), "--check-fullgraph")
    assert old[:2] == new[:2]
    assert "tcinspect: warning: `breaks --fullgraph` is deprecated and will be removed in the next release; use " \
           "--check-fullgraph" in old[2] and "deprecated" not in new[2]
    code, out, _ = cli(capsys, "breaks", "--help")
    assert code == 0 and "--check-fullgraph" in out and "--fullgraph" not in out.replace("--check-fullgraph", "")
    code, out, _ = cli(capsys, "export", "--help")
    assert code == 0 and "--strict-export" in out and "--strict " not in out


def test_debug_is_the_option_not_a_word_anywhere_in_argv(capsys):
    # a script's own --debug after `--` does not make tcinspect print a traceback
    code, _, err = cli(capsys, "trace", "no_such_model.py", "--", "--debug")
    assert code == ExitCode.USAGE_ERROR and "Traceback" not in err
    code, _, err = cli(capsys, "trace", "no_such_model.py", "--debug")
    assert code == ExitCode.USAGE_ERROR and "Traceback" in err


@pytest.mark.parametrize("args, line", [
    (("trace", str(LOG), "-f", "yml"), "--format 'yml' is not one of table, yaml, json, html, svg — pass --format yaml"),
    (("breaks", str(LOG), "-f", "html"), "--format 'html' is not one of table, yaml, json — pass --format yaml"),
    (("guards", str(LOG), "--dynamic", "maybe"), "--dynamic 'maybe' is not one of true, false, auto — pass "
                                                 "--dynamic true, false or auto"),
    (("codegen", str(LOG), "--sort", "bogus"), "--sort 'bogus' is not one of step, time, peak, launch — pass "
                                               "--sort step, time, peak or launch"),
])
def test_choices_are_checked_while_the_command_line_is_parsed(capsys, monkeypatch, args, line):
    from tcinspect import request

    monkeypatch.setattr(request, "obtained", lambda r: pytest.fail("a bad choice reached the library"))
    code, out, err = cli(capsys, *args)
    assert (code, out, err.strip()) == (ExitCode.USAGE_ERROR, "", f"tcinspect: error: {line}")


def test_a_failed_write_is_one_usage_error_that_is_still_an_os_error(tmp_path):
    from tcinspect import errors, outfile
    from tcinspect.errors import UsageError

    with pytest.raises(errors.OutputWriteError) as caught:
        outfile.write(tmp_path / "no" / "r.json", "{}", option="--junit")
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, OSError)
    assert caught.value.one_line() == (f"cannot write {tmp_path / 'no' / 'r.json'}: No such file or directory — "
                                       "choose a writable path for --junit")
    assert caught.value.strerror == "No such file or directory"
    bare = errors.OutputWriteError("cause", "fix", OSError("disk full"))  # no errno: its words, as an OSError's
    assert (bare.strerror, str(bare), bare.one_line()) == (None, "disk full", "cause — fix")


def test_relative_budgets_share_one_rule():
    from tcinspect.analysis.check.baseline import compare_relative

    def judged(now: float) -> tuple[str, str]:
        f = compare_relative("m", "compile_time", now, 10.0, 20, "m.py", lambda change: f"t ({change})")
        return f.status, f.message

    assert judged(12.5) == ("fail", "t (+25%, tolerance 20%)")
    assert judged(7.0) == ("improved", "t (-30%, tolerance 20%)")
    assert judged(11.0) == ("ok", "t (+10%, tolerance 20%)")
