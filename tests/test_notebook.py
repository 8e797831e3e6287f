"""A report in a notebook: one short line as its repr, its summary and sections as HTML, the CLI's tables from
``show()``, the files ``-o`` writes from ``save()``; and the Python API's errors in Python's words. Torch-free but
the one test that calls ``capture``: reports are read from a recorded TORCH_TRACE log or built by hand."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import tcinspect
from builders.reports import make_report
from helpers import DATA, cli, recorded_report
from tcinspect.errors import UsageError
from tcinspect.report import CompileOptions, Failure, Request

LOG = DATA / "torch_trace" / "torch-2.13.0" / "graph_breaks.log.gz"


@pytest.fixture(scope="module")
def rep():
    return recorded_report(LOG)


def test_repr_is_one_short_line_of_the_counts(rep):
    from tcinspect.serialize import dumps

    line = repr(rep)
    assert line == str(rep) and "\n" not in line and len(line) < 300
    assert line == (f"Report(target='{LOG}', torch='2.13.0+cpu', device='cpu', backend='inductor', graphs=4, "
                    "graph_breaks=3, recompiles=0, guards=68, kernels=10, compile_time_s=13.223, status='ok')")
    assert len(dumps(rep, "json")) > 1000 * len(line)  # what the dataclass repr printed, roughly
    failed = make_report(error="boom", failure=Failure("crashed", "boom"))
    assert repr(failed).endswith("compile_time_s=0, status='failed (crashed)')")
    assert repr(make_report()).startswith("Report(target='m.py', torch='2.13.0', device='cpu', backend='inductor',")


def test_the_notebook_html_is_the_pages_sections_with_content(rep):
    page = rep._repr_html_()
    assert page.startswith('<div class="tcinspect-report"><style>') and page.endswith("</div>")
    for section in ("findings", "summary", "breaks", "compile-time", "caches"):
        assert f'<section id="{section}">' in page, section
    assert 'data-key="graph_breaks"><b>3</b>' in page and "GB0059" in page
    # no graph is drawn or listed (the compile timeline's own small SVG stays), no script runs, and the styles
    # reach nothing outside the cell
    assert "picture ·" not in page and "<script" not in page and '<section id="dynamo">' not in page
    css = page[page.index("<style>") + 7:page.index("</style>")]
    assert all(rule.startswith(".tcinspect-report") for rule in re.findall(r"(?:^|})\s*([^{}]+)\{", css))
    quiet = make_report()
    assert '<section id="breaks">' not in quiet._repr_html_()  # a section without content is left out


def test_the_views_are_installed_on_import_and_import_nothing_heavy():
    import subprocess
    import sys

    from tcinspect import display, notebook

    assert display.views() is notebook
    code = ("import sys, tcinspect; heavy = [m for m in ('tcinspect.report', 'tcinspect.render', 'rich', 'torch') "
            "if m in sys.modules]; sys.exit(str(heavy) if heavy else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_show_prints_the_clis_tables(rep, capsys):
    rep.show("summary")
    out = capsys.readouterr().out
    assert "Summary" in out and re.search(r"graph breaks\s+3", out) and "dynamo_output_graph" not in out
    rep.show(["summary", "breaks"])
    assert "sorted" in capsys.readouterr().out
    with pytest.raises(UsageError) as err:
        rep.show("kernels")
    assert err.value.one_line().startswith("show(stages=...): no stage 'kernels' — choose from summary, dynamo")


@pytest.mark.parametrize("name", ["r.yaml", "r.yml", "r.json"])
def test_save_round_trips(rep, tmp_path, name):
    path = rep.save(tmp_path / name)
    assert path == tmp_path / name
    back = tcinspect.load_report(path)
    assert back == rep and back.timings == rep.timings


def test_save_writes_the_html_page_and_refuses_other_names(rep, tmp_path):
    page = rep.save(str(tmp_path / "r.html")).read_text()
    assert page.startswith("<!DOCTYPE html>") and '<section id="dynamo">' in page
    with pytest.raises(UsageError) as err:
        rep.save(tmp_path / "r.txt")
    assert err.value.one_line() == (f"save({str(tmp_path / 'r.txt')!r}): .txt is not a report format — name a "
                                    ".yaml, .json or .html file")
    assert not (tmp_path / "r.txt").exists()
    (tmp_path / "d.yaml").mkdir()
    with pytest.raises(UsageError) as err:
        rep.save(tmp_path / "d.yaml")
    assert err.value.one_line() == (f"save({str(tmp_path / 'd.yaml')!r}): {tmp_path / 'd.yaml'} is a directory — "
                                    "name a file in it, e.g. report.yaml")


def test_compile_options_take_pythons_true_false_and_none_for_dynamic():
    assert [CompileOptions(dynamic=v).dynamic for v in (True, False, None, "true", "false", "")] == [
        "true", "false", "", "true", "false", ""]
    assert CompileOptions(dynamic=True) == CompileOptions(dynamic="true")
    assert replace(CompileOptions(), dynamic=None).dynamic == ""


@pytest.mark.parametrize("build, line", [
    (lambda: CompileOptions(dynamic="maybe"), "dynamic='maybe' is not True, False or None — pass "
     "CompileOptions(dynamic=True), dynamic=False or dynamic=None (torch's default)"),
    (lambda: CompileOptions(device="tpu"), "device='tpu' is not cpu or cuda — pass CompileOptions(device='cpu'), "
     "device='cuda' or device='cuda:N'"),
    (lambda: Request(file="m.py", script=True, model_name="net"), "script=True runs the file as a script and "
     "model_name='net' as a model file; they contradict — pass one of them"),
    (lambda: Request(file="m.py", compile=CompileOptions(backend="b.py:fn", mode="max-autotune")),
     "CompileOptions(mode='max-autotune') configures Inductor's own backend, not backend='b.py:fn' or passes=() — "
     "leave out mode=, or use backend='inductor' without passes="),
    (lambda: Request(per_call=-1), "per_call=-1 is negative — pass per_call=N with N >= 0"),
])
def test_python_api_errors_name_the_parameter_not_the_flag(build, line):
    with pytest.raises(UsageError) as err:
        build()
    assert err.value.one_line() == line and "--" not in line


@pytest.mark.parametrize("args, line", [
    (("--device", "tpu"), "--device 'tpu' is not cpu or cuda — pass --device cpu or --device cuda"),
    (("--script", "--model", "net"), "--script runs the file as a script and --model NAME as a model file; they "
     "contradict — pass one of them"),
    (("--backend", "b.py:fn", "--mode", "max-autotune"), "--mode max-autotune configures Inductor's own backend, "
     "not --backend b.py:fn / --pass — leave out --mode, or use the inductor backend without --pass"),
])
def test_the_cli_still_names_its_flags(capsys, args, line):
    code, out, err = cli(capsys, "trace", str(LOG), *args)
    assert code == 2 and out == "" and err.strip().splitlines() == [f"tcinspect: error: {line}"]


def test_capture_with_a_compile_option_beside_the_model_says_where_it_goes():
    with pytest.raises(UsageError) as err:
        tcinspect.capture(abs, 1, backend="eager")
    assert err.value.one_line() == ("capture() takes no backend=: it is a compile option — pass "
                                    "compile=CompileOptions(backend='eager')")
    with pytest.raises(UsageError, match=r"^capture\(\) takes no input_set=$"):
        tcinspect.capture(abs, 1, input_set=[])
