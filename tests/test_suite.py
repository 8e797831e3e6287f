"""The suite's own rules: the torch-free layer imports no torch (shown able to fail), the test modules share
helpers.py rather than conftest, none reaches into bench/, and docs/testing.md's module table is true."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

import module_table
from helpers import ROOT

TESTS = ROOT / "tests"


def _pytest(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """Run pytest in a child on a test file of ``tmp_path``, with this suite's conftest and markers."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_the_torch_free_layer_fails_a_test_that_imports_torch_even_caught(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent('''
        import pytest

        def test_plain():
            assert "torch" not in __import__("sys").modules

        def test_sneaks_torch_in():
            import importlib

            try:  # a name the conftest's reading of the test's body does not see
                importlib.import_module("tor" + "ch")
            except ImportError:
                pass

        def test_a_child_imports_torch():
            import subprocess, sys
            subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)

        @pytest.mark.torch
        def test_marked():
            import torch  # noqa: F401
    '''))
    out = _pytest(tmp_path, "-m", "not torch", "-rf", "test_sample.py")
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "2 failed, 1 passed, 1 deselected" in text, text
    assert "test_sneaks_torch_in imported torch in the torch-free layer: mark it `torch`" in text
    assert "test_a_child_imports_torch imported torch (in a child process)" in text


def test_a_module_that_imports_torch_at_its_top_is_not_collected_by_the_torch_free_layer(tmp_path):
    (tmp_path / "test_top.py").write_text("import torch\n\n\ndef test_uses_torch():\n    assert torch.ones(1)\n")
    (tmp_path / "test_free.py").write_text("def test_free():\n    assert True\n")
    out = _pytest(tmp_path, "-m", "not torch", "test_top.py", "test_free.py")
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout + out.stderr


@pytest.mark.torch
def test_the_torch_marker_selects_what_the_torch_free_layer_leaves_out(tmp_path):
    """`-m torch` and `-m "not torch"` split the suite: a test of a module importing torch at its top, of a torch
    fixture's user and one marked by hand are selected by `-m torch` (before, the first was in neither)."""
    (tmp_path / "test_top.py").write_text("import torch\n\n\ndef test_uses_torch():\n    assert torch.ones(1)\n")
    (tmp_path / "test_mixed.py").write_text(textwrap.dedent('''
        import pytest

        def test_free():
            assert True

        @pytest.mark.slow
        def test_implied():
            pass
    '''))
    out = _pytest(tmp_path, "-m", "torch", "--collect-only", "test_top.py", "test_mixed.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "test_top.py::test_uses_torch" in out.stdout and "test_mixed.py::test_implied" in out.stdout
    assert "2/3 tests collected (1 deselected)" in out.stdout, out.stdout


def _test_modules():
    return [*sorted(TESTS.glob("test_*.py")), TESTS / "conformance.py"]


def _imports_conftest(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module == "conftest"
    return isinstance(node, ast.Import) and any(a.name == "conftest" for a in node.names)


def test_modules_import_helpers_not_conftest():
    bad = [p.name for p in _test_modules() if any(map(_imports_conftest, ast.walk(ast.parse(p.read_bytes()))))]
    assert bad == [], f"import from helpers (tests/helpers.py), not conftest: {bad}"


def test_no_test_reaches_into_bench():
    bad = [p.name for p in _test_modules() if re.search(r"sys\.path\.(insert|append)\(.*[\"']bench[\"']", p.read_text())]
    assert bad == [], f"these put bench/ on sys.path; share the code through tests/builders instead: {bad}"


def test_the_module_table_in_docs_testing_is_true():
    table = module_table.table()
    assert module_table.documented() == table, \
        "docs/testing.md's module table is out of date: run python tests/module_table.py --write"
    # every source module has a row, and the table names only test modules that exist
    rows = table.splitlines()[2:]
    assert len(rows) == len(module_table.source_modules())
    assert any("`test_report_io`" in r for r in rows if r.startswith("| `serialize`"))


@pytest.mark.torch
def test_a_test_that_compiles_with_inductor_without_the_slow_marker_is_named(tmp_path):
    # torch's own record of Inductor's compiles grows as a compile (or a cache hit) would make it grow
    (tmp_path / "test_inductor.py").write_text(textwrap.dedent('''
        import pytest
        import torch  # noqa: F401  (at the top, as in the suite's modules)

        def _compiled_with_inductor():  # what compile_fx_inner does, without compiling (and then a reset)
            import torch._dynamo
            from torch._dynamo import utils

            with utils.dynamo_timed("compile_fx_inner"):
                pass
            torch._dynamo.reset()

        def test_unmarked():
            _compiled_with_inductor()

        @pytest.mark.slow
        def test_marked():
            _compiled_with_inductor()

        def test_no_compile():
            assert torch.ones(1)
    '''))
    out = _pytest(tmp_path, "test_inductor.py")
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "3 passed" in text, text
    assert "test_inductor.py::test_unmarked compiled with Inductor: mark it `slow`" in text
    assert "test_marked compiled" not in text and "test_no_compile compiled" not in text
