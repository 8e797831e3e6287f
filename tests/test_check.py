"""`tcinspect check` and `tcinspect diff`: exit codes on real models, baselines, CI formats, the pytest helper."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import torch
import yaml

from helpers import MODELS, ROOT, SAMPLES, cli
from tcinspect import outfile
from tcinspect.assertions import assert_compiles

CHECK = ["--backend", "eager"]  # breaks, graphs and recompiles need Dynamo only: fast tests


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project directory with a copy of the graph-breaks sample, run from inside it."""
    model = tmp_path / "model.py"
    shutil.copy(SAMPLES / "graph_breaks.py", model)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_thresholds_pass_fail_and_usage(capsys, project):
    code, out, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "3", *CHECK)
    assert code == 0 and "passed" in out
    code, out, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "2", "--max-graphs", "10", *CHECK)
    assert code == 1 and "graph_breaks 3 > max 2" in out and "FAILED: 1 regression" in out
    code, _, err = cli(capsys, "check", "model.py", *CHECK)
    assert code == 2 and "nothing to check" in err
    code, _, err = cli(capsys, "check", "missing.py", "--max-graphs", "1", *CHECK)
    assert code == 2 and "does not exist" in err


def test_data_dependent_breaks_are_counted(capsys, tmp_path, monkeypatch):
    # the case torch._dynamo.utils.counters["graph_break"] misses
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, "check", str(MODELS / "breaks" / "data_dependent.py"), "--max-graph-breaks", "0", *CHECK)
    assert code == 1 and "graph_breaks 1 > max 0" in out


def test_check_compiles_in_a_child_process_unless_in_process_is_asked(capsys, project, monkeypatch):
    # a CI gate ends with a verdict (a crash or a hang is exit 4): by default check compiles in a child process;
    # only $TCINSPECT_IN_PROCESS, which this suite sets so that check's other tests import torch once, does not
    from tcinspect.capturing import isolate

    children = []
    real = isolate.capture_isolated
    monkeypatch.setattr(isolate, "capture_isolated", lambda *a, **kw: children.append(a) or real(*a, **kw))
    monkeypatch.delenv("TCINSPECT_IN_PROCESS")
    code, out, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "2", *CHECK)
    assert code == 1 and "graph_breaks 3 > max 2" in out and len(children) == 1
    monkeypatch.setenv("TCINSPECT_IN_PROCESS", "1")
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(project / "another-cache"))  # compile again, not reuse
    code, out, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "2", *CHECK)
    assert code == 1 and "graph_breaks 3 > max 2" in out and len(children) == 1


def test_baseline_regression_improvement_and_line_shift(capsys, project):
    lock = project / "tcinspect.lock.yaml"
    code, _, err = cli(capsys, "check", "model.py", "--baseline", str(lock), "--update", *CHECK)
    assert code == 0 and "updated" in err
    text = lock.read_text()
    data = yaml.safe_load(text)
    assert list(data["models"]) == ["model.py"] and str(project) not in text and "time" not in text
    assert data["models"]["model.py"]["graph_breaks"] == 3

    # an unrelated edit that shifts every line: still passes
    src = (project / "model.py").read_text()
    (project / "model.py").write_text("# a new comment line\n\n" + src)
    code, out, _ = cli(capsys, "check", "model.py", "--baseline", str(lock), *CHECK)
    assert code == 0, out

    # a new break: fails, named with file:line
    (project / "model.py").write_text(src.replace("        return results[0]",
                                                  "        torch._dynamo.graph_break()\n        return results[0]"))
    code, out, _ = cli(capsys, "check", "model.py", "--baseline", str(lock), *CHECK)
    assert code == 1 and "new graph break at model.py:16" in out and "graph_breaks 4 > baseline 3" in out

    # a fixed break: reported as an improvement, passes
    (project / "model.py").write_text(src.replace('        print(f"Input norm: {x.norm()}")  # break 1: print is a side effect\n', ""))
    code, out, _ = cli(capsys, "check", "model.py", "--baseline", str(lock), *CHECK)
    assert code == 0 and "graph break fixed" in out and "improved" in out


def test_github_annotations_point_at_the_new_break(capsys, project):
    lock = project / "lock.yaml"
    assert cli(capsys, "check", "model.py", "--baseline", str(lock), "--update", *CHECK)[0] == 0
    src = (project / "model.py").read_text()
    (project / "model.py").write_text(src.replace("        return results[0]",
                                                  "        torch._dynamo.graph_break()\n        return results[0]"))
    code, out, _ = cli(capsys, "check", "model.py", "--baseline", str(lock), "--format", "github", *CHECK)
    assert code == 1
    errors = [ln for ln in out.splitlines() if ln.startswith("::error ")]
    new = next(ln for ln in errors if "new graph break" in ln)
    assert "file=model.py,line=16," in new
    assert (project / "model.py").read_text().splitlines()[15].strip() == "torch._dynamo.graph_break()"


def test_junit_file_parses(capsys, project):
    junit = project / "out" / "junit.xml"
    junit.parent.mkdir()
    code, _, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "1", "--max-recompiles", "0",
                     "--junit", str(junit), *CHECK)
    assert code == 1
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failures = root.findall(".//testcase/failure")
    assert len(failures) == 1 and "graph_breaks 3 > max 1" in failures[0].get("message")


def test_bad_baselines_are_exit_2_never_green(capsys, project):
    lock = project / "lock.yaml"
    for text, needle in [("models: [unclosed", "not valid YAML"), ("foo: 1\n", "not a tcinspect baseline"),
                         ("schema_version: 7\nmodels: {}\n", "schema version 7"),
                         ("schema_version: 1\nmodels: {other.py: {graphs: 1, graph_breaks: 0, recompiles: 0, kernels: 0}}\n",
                          "model.py is not in baseline")]:
        lock.write_text(text)
        code, _, err = cli(capsys, "check", "model.py", "--baseline", str(lock), *CHECK)
        assert code == 2 and needle in err, (text, err)
    code, _, err = cli(capsys, "check", "model.py", "--baseline", str(project / "none.yaml"), *CHECK)
    assert code == 2 and "does not exist" in err


def test_update_is_atomic(capsys, project, monkeypatch):
    lock = project / "lock.yaml"
    lock.write_text("keep me\n")
    monkeypatch.setattr(outfile.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    code, _, err = cli(capsys, "check", "model.py", "--baseline", str(lock), "--update", *CHECK)
    assert code == 2 and "cannot write baseline" in err and "disk full" in err
    assert lock.read_text() == "keep me\n"
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".lock")) == []


def test_pyproject_config_runs_a_bare_check(capsys, project):
    (project / "pyproject.toml").write_text(
        '[tool.tcinspect]\nmodels = ["model.py"]\nmax_graph_breaks = 5\n\n[tool.tcinspect.model."model.py"]\nmax_graphs = 3\n')
    code, out, _ = cli(capsys, "check", *CHECK)
    assert code == 1 and "graphs 4 > max 3" in out and "graph_breaks 3 <= max 5" in out
    (project / "pyproject.toml").write_text("[tool.tcinspect]\nmodels = 'model.py'\n")
    code, _, err = cli(capsys, "check", *CHECK)
    assert code == 2 and "models must be a list" in err


def test_stage_failure_never_passes(capsys, project):
    code, _, err = cli(capsys, "check", str(MODELS / "failing_backend.py"), "--max-graph-breaks", "10",
                       "--backend", "tcinspect_failing")
    assert code == 3 and "lowering failed on purpose" in err


def test_json_format(capsys, project):
    code, out, _ = cli(capsys, "check", "model.py", "--max-graph-breaks", "0", "--format", "json", *CHECK)
    doc = json.loads(out)
    assert code == 1 and doc["passed"] is False and doc["findings"][0]["check"] == "graph_breaks"


def test_diff_of_two_reports(capsys, project):
    before, after = project / "before.yaml", project / "after.yaml"
    assert cli(capsys, "trace", "model.py", "-o", str(before), "-f", "yaml", *CHECK)[0] == 0
    src = (project / "model.py").read_text()
    (project / "model.py").write_text(src.replace('        print(f"Input norm: {x.norm()}")  # break 1: print is a side effect\n', ""))
    assert cli(capsys, "trace", "model.py", "-o", str(after), "-f", "yaml", *CHECK)[0] == 0
    code, out, _ = cli(capsys, "diff", str(before), str(after), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"]["graph_breaks"] == {"a": 3, "b": 2}
    assert [b["change"] for b in doc["graph_breaks"]] == ["removed"]
    assert "Failed to trace builtin operator" in doc["graph_breaks"][0]["break"]
    code, out, _ = cli(capsys, "diff", str(before), str(before))
    assert code == 0 and "no differences" in out
    code, _, err = cli(capsys, "diff", str(before), str(project / "nope.yaml"))
    assert code == 2 and "no such file" in err


def test_assert_compiles_passes_and_fails_readably():
    def clean(x):
        return torch.relu(x) * 2

    rep = assert_compiles(clean, torch.randn(4))
    assert rep.summary.graph_breaks == 0

    def branchy(x):
        if x.sum() > 0:
            return x * 2
        return x

    with pytest.raises(AssertionError) as err:
        assert_compiles(branchy, torch.randn(4).abs())
    msg = str(err.value)
    assert "graph_breaks 1 > max 0" in msg and "Data-dependent branching" in msg and "if x.sum() > 0:" in msg

    def scaled(x, n):
        return x * n

    with pytest.raises(AssertionError) as err:
        assert_compiles(scaled, torch.randn(4), 2, input_sets=[(torch.randn(4), 3)], max_graph_breaks=None)
    assert "recompiles 1 > max 0" in str(err.value) and "recompile" in str(err.value)


def test_pytest_plugin_fixture_fails_a_test_with_the_breaks_and_no_trace_log_lines(tmp_path):
    test_file = tmp_path / "test_model.py"
    test_file.write_text(
        "import torch\n\n"
        "def forward(x):\n"
        "    print('hello')\n"
        "    return x.sin()\n\n"
        "def test_no_breaks(tcinspect_check):\n"
        "    tcinspect_check(forward, torch.randn(3), max_graph_breaks=0)\n"
    )
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                         capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                         timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "graph_breaks 1 > max 0" in res.stdout and "test_model.py:4 in forward" in res.stdout
    assert "Failed to trace builtin operator" in res.stdout and "torch.compile budget exceeded" in res.stdout
    # the failing test's report shows the budget, never the structured trace's own log lines
    assert "torch.__trace" not in res.stdout and "torch.__trace" not in res.stderr
