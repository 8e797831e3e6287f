"""The bad-input corpus: every model file that can go wrong, its exit code and its one-line message.

Each row runs the real CLI (in-process, through its error boundary; `--timeout` rows in a child
process). A row with exit 2 must print nothing on stdout (nothing was captured); a row with exit
3 or 4 must still show the stages recorded before the failure. No row may print a traceback.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pytest

from conftest import MODELS, SAMPLES, cli


@dataclass
class Case:
    file: str  # relative to tests/models (or an absolute path / a path that does not exist)
    code: int
    needles: tuple[str, ...]
    args: tuple[str, ...] = ("--backend", "eager")
    command: str = "trace"
    check: Optional[Callable[[str, str, Path], None]] = field(default=None, repr=False)


def _json_is_clean(out: str, err: str, tmp: Path) -> None:
    doc = json.loads(out)  # the model's megabytes of prints went to stderr, not into the JSON
    assert doc["summary"]["graphs"] == 1 and len(err) > 3_000_000


def _output_in_the_callers_directory(out: str, err: str, tmp: Path) -> None:
    assert (tmp / "report.yaml").is_file() and os.getcwd() == str(tmp)


def _still_has_graphs(out: str, err: str, tmp: Path) -> None:
    assert "dynamo_output_graph 0/0" in out


CASES = [
    Case("does/not/exist.py", 2, ("does not exist", "check the path")),
    Case(".", 2, ("is a directory",)),
    Case("not_python.txt", 2, ("not_python.txt:1: syntax error",)),
    Case("binary.py", 2, ("is not UTF-8 text",)),
    Case("not_utf8.py", 2, ("not UTF-8",)),
    Case("syntax_error.py", 2, ("syntax_error.py:3: syntax error", "py_compile")),
    Case("import_error.py", 2, ("import_error.py:2", "ModuleNotFoundError")),
    Case("exit_at_import.py", 2, ("called sys.exit(3) while being imported", "__main__")),
    Case("exit_in_forward.py", 2, ("the model called sys.exit('stopping from inside forward') inside forward",)),
    Case("no_model.py", 2, ("defines no `model` at module level) and compiled nothing",)),
    Case("empty.py", 2, ("defines no `model`",)),
    Case("model_not_callable.py", 2, ("is a int, not an nn.Module or callable",)),
    Case("model_is_a_class.py", 2, ("is the class Net, not a module", "model = Net()")),
    Case("inputs_not_tuple.py", 2, ("is a Tensor, not a tuple",)),
    Case("inputs_callable_raises.py", 2, ("calling `example_inputs()` raised FileNotFoundError",)),
    Case("input_sets_not_list.py", 2, ("`input_sets`", "is a dict, not a list")),
    Case("wrong_device_input.py", 2, ("the model raised RuntimeError", "expected device meta")),
    Case("needs_cuda.py", 2, ("needs a CUDA GPU", "device = 'cuda'")),
    Case("device_not_string.py", 2, ("unknown device '7'",)),
    Case("raises.py", 2, ("raises.py:6", "ValueError: boom in forward", "runs eagerly")),
    Case("recursion.py", 2, ("RecursionError",)),
    Case("shape_mismatch.py", 2, ("mat1 and mat2 shapes cannot be multiplied",), ("--backend", "aot_eager")),
    Case("no_autograd_op.py", 2, ("no autograd formula",), ("--backend", "aot_eager")),
    Case("script_raises.py", 2, ("script_raises.py:6: the script raised KeyError",)),
    # fails only under Dynamo: fine eagerly and with a plain torch.compile, not with fullgraph=True
    Case("fullgraph_break.py", 3, ("dynamo stage failed",), ("--backend", "eager", "--fullgraph")),
    # fails in Inductor's lowering, after Dynamo and AOTAutograd worked
    Case(str(SAMPLES / "silu_pass.py"), 3, ("inductor stage failed", "both a fallback and a decomp"),
         ("--pass", f"{SAMPLES / 'silu_pass.py'}:rewrite_silu", "-s", "summary,aot"),
         check=lambda out, err, tmp: None if "aot_forward_graph 0/0" in out else pytest.fail(out)),
    Case("failing_backend.py", 3, ("lowering failed on purpose",), ("--backend", "tcinspect_failing")),
    Case("segfault.py", 4, ("the capture process crashed (killed by SIGSEGV)",),
         ("--backend", "eager", "--timeout", "120", "-s", "summary"),
         check=lambda out, err, tmp: None if "dynamo          failed" in out else pytest.fail(out)),
    Case("hangs.py", 4, ("ran past --timeout 30 s",), ("--timeout", "30"), command="breaks",
         check=lambda out, err, tmp: None if "hangs.py:7" in out else pytest.fail(out)),
    # not errors: models that misbehave in ways tcinspect must absorb
    Case("loud.py", 0, (), ("--backend", "eager", "-f", "json"), check=_json_is_clean),
    Case("changes_cwd.py", 0, (), ("--backend", "eager", "-o", "report.yaml", "-s", "summary"),
         check=_output_in_the_callers_directory),
    Case("resets_dynamo.py", 0, (), ("--backend", "eager", "-s", "dynamo"), check=_still_has_graphs),
]


def test_the_corpus_is_at_least_25_bad_files():
    bad = [c for c in CASES if c.code != 0]
    assert len(bad) >= 25 and len({c.file for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[Path(c.file).stem or "directory" for c in CASES])
def test_corpus(capsys, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    path = case.file if os.path.isabs(case.file) or case.file.startswith("does/") else str(MODELS / case.file)
    code, out, err = cli(capsys, case.command, path, *case.args)
    assert code == case.code, (code, err[-2000:])
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("tcinspect: error:")]
    if case.code == 0:
        assert errors == []
    else:
        assert len(errors) == 1, err[-2000:]
        for needle in case.needles:
            assert needle in errors[0], (needle, errors[0])
        assert " — " in errors[0]  # the cause, then the fix
    if case.code == 2:
        assert out == ""  # nothing captured, nothing shown
    if case.check is not None:
        case.check(out, err, tmp_path)
