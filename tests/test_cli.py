"""The CLI through its real entry point: exit codes, one-line errors, output files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from helpers import MODELS, SAMPLES, cli, cuda_available, run_cli  # noqa: F401  (cuda_available: named in a skipif)
from tcinspect.errors import ExitCode


def assert_one_line_error(err: str, *needles: str):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("tcinspect: error:")]
    assert len(errors) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("path,needles", [
    ("does/not/exist.py", ["does not exist", "check the path"]),
    (str(MODELS), ["is a directory"]),
    (str(MODELS / "syntax_error.py"), ["syntax_error.py:3: syntax error", "py_compile"]),
    (str(MODELS / "not_utf8.py"), ["not UTF-8"]),
    (str(MODELS / "import_error.py"), ["import_error.py:2", "ModuleNotFoundError", "not_a_real_module_xyz"]),
    (str(MODELS / "no_model.py"), ["defines no `model` at module level) and compiled nothing", "define `model`"]),
    (str(MODELS / "inputs_not_tuple.py"), ["is a Tensor, not a tuple", "(x,)"]),
    (str(MODELS / "model_not_callable.py"), ["is a int, not an nn.Module or callable"]),
    (str(MODELS / "raises.py"), ["raises.py:6", "ValueError: boom in forward", "runs eagerly"]),
    (str(MODELS / "no_autograd_op.py"), ["the model raised RuntimeError", "no autograd formula"]),
    # torch 2.15 prefixes the message with the op ("addmm: mat1 and mat2 ..."): match the stable part
    (str(MODELS / "shape_mismatch.py"), ["the model raised RuntimeError: ", "mat1 and mat2 shapes cannot be multiplied"]),
])
@pytest.mark.torch
def test_bad_model_files_exit_2_with_one_line(capsys, path, needles):
    code, out, err = cli(capsys, "trace", path, "--backend", "aot_eager")
    assert code == ExitCode.USAGE_ERROR == 2
    assert_one_line_error(err, *needles)
    assert out == ""


@pytest.mark.torch
def test_debug_shows_the_traceback(capsys):
    code, _, err = cli(capsys, "trace", str(MODELS / "raises.py"), "--backend", "eager", "--debug")
    assert code == 2 and "Traceback" in err and "boom in forward" in err


def test_bad_options_exit_2(capsys):
    code, _, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--stage", "nonsense")
    assert code == 2 and "unknown stage 'nonsense'" in err
    code, _, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--format", "xml")
    assert code == 2 and "--format 'xml'" in err
    code, _, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--dynamic", "maybe")
    assert code == 2


@pytest.mark.torch
@pytest.mark.skipif("cuda_available()", reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_one_line(capsys):
    code, _, err = cli(capsys, "trace", str(SAMPLES / "lenet_triton_relu.py"))
    assert code == 2
    assert_one_line_error(err, "needs a CUDA GPU", "this machine has none")


@pytest.mark.torch
def test_stage_failure_exits_3_and_still_shows_what_worked(capsys):
    code, out, err = cli(capsys, "trace", str(MODELS / "failing_backend.py"), "--backend", "tcinspect_failing")
    assert code == ExitCode.STAGE_FAILED == 3
    assert "lowering failed on purpose" in err
    assert "dynamo_output_graph 0/0" in out and "failed" in out


@pytest.mark.torch
def test_trace_writes_yaml_and_reads_it_back_the_same(capsys, tmp_path):
    out_file = tmp_path / "report.yaml"
    code, out, err = cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "aot_eager",
                         "-o", str(out_file), "--format", "yaml")
    assert code == 0 and out == "" and f"wrote {out_file}" in err
    data = yaml.safe_load(out_file.read_text())
    assert data["summary"]["graphs"] == 4 and data["summary"]["graph_breaks"] == 3
    code, from_model, _ = cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "aot_eager")
    code2, from_report, _ = cli(capsys, "trace", str(out_file))
    assert code == code2 == 0
    assert from_model == from_report


@pytest.mark.torch
def test_json_on_stdout_is_clean_even_when_the_model_prints(capsys):
    code, out, err = cli(capsys, "trace", str(SAMPLES / "graph_breaks.py"), "--backend", "eager", "--format", "json")
    assert code == 0
    assert json.loads(out)["summary"]["graph_breaks"] == 3  # the model's print went to stderr
    assert "Input norm" in err


@pytest.mark.torch
def test_cache_reuse_and_staleness(capsys, tmp_path):
    model = tmp_path / "m.py"
    model.write_text((SAMPLES / "tiny.py").read_text())
    code, _, err = cli(capsys, "trace", str(model), "--backend", "eager", "-s", "summary")
    assert code == 0 and "reusing" not in err
    code, _, err = cli(capsys, "trace", str(model), "--backend", "eager", "-s", "summary")
    assert code == 0 and "reusing the current report" in err
    code, out, err = cli(capsys, "trace", "-s", "summary")  # no file: the latest trace
    assert code == 0 and "from trace of" in err and "graphs" in out
    model.write_text(model.read_text() + "\n# edited\n")
    code, _, err = cli(capsys, "trace", str(model), "--backend", "eager", "-s", "summary")
    assert code == 0 and "reusing" not in err
    code, _, err = cli(capsys, "trace", str(model), "--backend", "eager", "-s", "summary", "--fresh")
    assert code == 0 and "reusing" not in err


def test_no_file_and_no_cache_is_one_line(capsys):
    code, _, err = cli(capsys, "trace")
    assert code == 2
    assert_one_line_error(err, "no FILE given and no earlier trace", "tcinspect trace model.py")


def test_corrupt_cache_entry_is_discarded_with_a_warning(capsys, tmp_path, monkeypatch):
    cache = tmp_path / "c"
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(cache))
    cache.mkdir()
    (cache / "broken-0000.json").write_text("{not json")
    code, _, err = cli(capsys, "trace")
    assert code == 2 and "discarding unreadable cache entry" in err
    assert not (cache / "broken-0000.json").exists()


def test_bad_saved_reports(capsys, tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("schema_version: 99\nstages: {}\n")
    code, _, err = cli(capsys, "trace", str(bad))
    assert code == 2
    assert_one_line_error(err, "schema version 99", "re-run `tcinspect trace`")
    code, _, err = cli(capsys, "trace", str(tmp_path / "missing.json"))
    assert code == 2 and "no such file" in err


@pytest.mark.torch
def test_existing_output_is_kept_when_the_capture_fails(capsys, tmp_path):
    out_file = tmp_path / "keep.yaml"
    out_file.write_text("precious\n")
    code, _, _ = cli(capsys, "trace", str(MODELS / "raises.py"), "--backend", "eager", "-o", str(out_file))
    assert code == 2 and out_file.read_text() == "precious\n"


def test_help_is_fast_and_does_not_import_torch():
    code = "import sys, tcinspect.cli; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    res = run_cli("--help")
    assert res.returncode == 0 and "Exit codes" in res.stdout and "trace" in res.stdout


@pytest.mark.torch
def test_python_dash_m_runs_a_sample(tmp_path):
    res = run_cli("trace", str(SAMPLES / "tiny.py"), "--backend", "aot_eager", "-s", "summary,dynamo")
    assert res.returncode == 0, res.stderr
    assert "dynamo_output_graph 0/0" in res.stdout and "tiny.py:11" in res.stdout


@pytest.mark.torch
def test_unwritable_cache_is_a_warning_not_a_failure(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(blocker))
    code, out, err = cli(capsys, "trace", str(SAMPLES / "tiny.py"), "--backend", "eager", "-s", "summary")
    assert code == 0 and "graphs" in out
    assert "warning: could not save the report in the cache" in err


def test_text_that_reads_like_an_emoji_code_is_shown_as_written(capsys):
    """Rich replaces ``:b:`` with 🅱 and ``:zap:`` with ⚡ in a table's text unless told not to: a user's line such as
    ``y = x[a:b:2]`` (in `codegen --kernel`'s frames, a guard, a break's reason) is shown as it was written, by the
    console every command's tables print through."""
    from rich.table import Table

    from tcinspect.cli import common

    line = "y = x[a:b:2]  # :zap:"
    table = Table()
    table.add_column("frames")
    table.add_row(f"model.py:3 in forward  {line}")
    common._emit(lambda fmt: "", "table", None, lambda: table)
    out = capsys.readouterr().out
    assert line in out and not {"🅱", "⚡"} & set(out)
