"""The public Python API speaks the Request's parts (compile, verify, export, bench, ...): the old flat
``Options`` and assert_compiles' own keywords still work for one release with a DeprecationWarning; the
root's global --debug; the AOTInductor child compiles the model file as its parent read it."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

import tcinspect
from helpers import SAMPLES, cli
from tcinspect.capturing import engine, recording
from tcinspect.errors import ExitCode, UsageError
from tcinspect.report import BenchRequest, CompileOptions, ExportRequest, Options, VerifyRequest

#: tcinspect.capturing.engine and recording import torch
pytestmark = pytest.mark.torch

#: A record with every part set: the old spelling must come out as the same report options.
EVERY_PART = Options(backend="aot_eager", mode="", fullgraph=True, dynamic="false", backward=False, device="cpu",
                     passes=("p.py:f",), verify=True, rtol=1e-3, atol=1e-4, export=("strict",), dynamic_dims=(0,),
                     aoti=True, bench=7, try_mode="max-autotune", per_call=3, measure_memory=True)


@pytest.fixture
def asked(monkeypatch):
    """The options each capture was asked with, the compile itself left out (no torch.compile runs)."""
    got: list[Options] = []
    monkeypatch.setattr(recording, "capture_loaded", lambda loaded, target, opts, *a, **k: got.append(opts))
    return got


def test_capture_takes_the_request_parts_and_the_old_options_warn_once_and_record_the_same(asked):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns of nothing
        tcinspect.capture(abs, 1, compile=CompileOptions(backend="aot_eager", fullgraph=True, dynamic="false",
                                                        backward=False, device="cpu", passes=("p.py:f",)),
                          verify=VerifyRequest(1e-3, 1e-4), export=ExportRequest(("strict",), (0,), aoti=True),
                          bench=BenchRequest(7, "max-autotune"), per_call=3, measure_memory=True)
    with pytest.warns(DeprecationWarning) as caught:
        tcinspect.capture(abs, 1, options=EVERY_PART)
    assert asked == [EVERY_PART, EVERY_PART]
    (w,) = caught
    message = str(w.message)
    assert "\n" not in message and "deprecated" in message and "compile=CompileOptions(...)" in message
    assert Path(w.filename) == Path(__file__)  # the caller's line, not tcinspect's


def test_capture_file_takes_request_fields_and_the_old_keywords_warn(asked, tmp_path):
    model = tmp_path / "m.py"
    model.write_text("model = abs\nexample_inputs = (1,)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tcinspect.capture_file(model, compile=CompileOptions(backend="eager"), per_call=2)
    with pytest.warns(DeprecationWarning, match="use compile=CompileOptions"):
        tcinspect.capture_file(model, options=Options(backend="eager", per_call=2))
    with pytest.warns(DeprecationWarning, match="use script=True"):
        tcinspect.capture_file(model, as_script=False)
    assert asked[0] == asked[1] == Options(backend="eager", per_call=2)
    assert asked[2] == Options()


def test_assert_compiles_takes_compile_options_and_the_old_keywords_warn(monkeypatch):
    got: list = []

    def capture(model, *inputs, input_sets=(), compile=None):
        got.append(compile)
        raise RuntimeError("stop before compiling")

    monkeypatch.setattr(engine, "capture", capture)
    for call in (lambda: tcinspect.assert_compiles(abs, 1),
                 lambda: tcinspect.assert_compiles(abs, 1, compile=CompileOptions(backend="eager", dynamic="true"))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeError):
                call()
    new = r"use compile=CompileOptions\(backend='eager', dynamic='true'\)"
    with pytest.warns(DeprecationWarning, match=new), pytest.raises(RuntimeError):
        tcinspect.assert_compiles(abs, 1, backend="eager", dynamic="true")
    assert got == [CompileOptions(backend="eager"), CompileOptions(backend="eager", dynamic="true"),
                   CompileOptions(backend="eager", dynamic="true")]


@pytest.mark.parametrize("call, line", [
    (lambda: tcinspect.capture(abs, 1, compile="eager"),
     "compile='eager' is not a CompileOptions — pass compile=CompileOptions(...), e.g. "
     "compile=CompileOptions(backend='eager')"),
    (lambda: tcinspect.capture(abs, 1, verify=True), "verify=True is not a VerifyRequest"),
    (lambda: tcinspect.capture(abs, 1, bench=100), "bench=100 is not a BenchRequest"),
    (lambda: tcinspect.capture(abs, 1, compile=CompileOptions(dynamic="yes")), "dynamic='yes' is not True, False or"),
    (lambda: tcinspect.capture(abs, 1, options=Options(), compile=CompileOptions()),
     "options= and compile= were both given"),
    (lambda: tcinspect.capture_file("m.py", backend="eager"), "capture_file() takes no backend="),
    (lambda: tcinspect.assert_compiles(abs, 1, max_kernels=1), "max_kernels needs the inductor backend"),
    (lambda: tcinspect.assert_compiles(abs, 1, compile=CompileOptions(), backend="eager"),
     "compile= and backend= were both given"),
    (lambda: tcinspect.assert_compiles(abs, 1, bakend="eager"), "assert_compiles() takes no bakend="),
    (lambda: tcinspect.assert_compiles(abs, 1, compile="inductor"), "compile='inductor' is not a CompileOptions"),
])
def test_bad_values_raise_the_one_line_usage_error(asked, call, line):
    with pytest.raises(UsageError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        call()
    assert err.value.one_line().startswith(line) and "\n" not in err.value.one_line()
    assert asked == []  # nothing ran


# ----------------------------------------------------------------------------- global flags on the root


def test_debug_before_the_command_is_the_root_global_flag(capsys, monkeypatch):
    from tcinspect import request

    seen: list = []

    def obtained(r):
        seen.append((r.isolate, r.quiet))
        raise UsageError("stop here", "nothing to fix")

    monkeypatch.setattr(request, "obtained", obtained)
    monkeypatch.delenv("TCINSPECT_IN_PROCESS", raising=False)  # the default: a model file compiles in a child
    model = str(SAMPLES / "tiny.py")
    code, _, err = cli(capsys, "--debug", "trace", model)
    assert code == ExitCode.USAGE_ERROR and "Traceback" in err  # the root's --debug shows the traceback
    code, _, err2 = cli(capsys, "trace", model, "--debug")
    assert code == ExitCode.USAGE_ERROR and "Traceback" in err2
    code, _, err3 = cli(capsys, "trace", model)
    assert code == ExitCode.USAGE_ERROR and "Traceback" not in err3  # and it is not left on for the next run
    # --debug compiles in tcinspect's own process with torch's log output, however it was given
    assert seen == [(False, False), (False, False), (True, True)]
    # a script's own --debug after `--` stays the script's
    code, _, err4 = cli(capsys, "trace", "no_such_model.py", "--", "--debug")
    assert code == ExitCode.USAGE_ERROR and "Traceback" not in err4
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "--debug" in out


# ----------------------------------------------------------------------------- AOTInductor reads no file again


@pytest.mark.slow  # torch.export runs (the package itself is not built)
def test_the_aoti_child_compiles_the_bytes_its_parent_read(tmp_path, monkeypatch):
    import subprocess

    from tcinspect.capturing import export, modelfile
    from tcinspect.report import AotiRun, Target

    model = tmp_path / "m.py"
    model.write_text("import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.randn(1, 2),)\n")
    source = modelfile.read(model)
    model.write_text("raise SystemExit('the file was read again')\n")  # changed since the parent read it
    reads: list = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    children: list = []

    def child(argv, **kwargs):  # the child, run here: its request file is all it gets
        children.append(json.loads(Path(argv[-1]).read_text()))
        assert export._aoti_child(argv[-1]) == 0
        return subprocess.CompletedProcess(argv, 0, "")

    monkeypatch.setattr(subprocess, "run", child)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the child puts the model's directory first
    monkeypatch.setattr(export, "_aoti", lambda ep, module, inputs, mode, options: AotiRun(True, f"{mode}.pt2"))
    target = Target(kind="model", path=str(model), model_name="model", inputs_name="example_inputs")
    run = export._aoti_isolated(target, "non-strict", Options(export=("non-strict",), aoti=True), source)
    assert run.ok and run.error == ""
    assert model not in reads  # the file is never read again: the child loads the parent's bytes
    assert children[0]["path"] == str(model) and Path(children[0]["source"]).name == "source.py"


def test_options_record_every_compile_option_under_its_own_name():
    # Options.of / Options.compile copy CompileOptions field by field: a new compile option is one field in each
    every = CompileOptions(backend="aot_eager", mode="max-autotune", fullgraph=True, dynamic="true", backward=False,
                           device="cpu", passes=("p.py:f",), dynamo_config=("capture_scalar_outputs=True",))
    assert every != CompileOptions() and all(getattr(every, n) != getattr(CompileOptions(), n)
                                             for n in CompileOptions.__dataclass_fields__)
    assert Options.of(every).compile == every
    assert Options.of(every, bench=BenchRequest(3)).bench_request == BenchRequest(3)
