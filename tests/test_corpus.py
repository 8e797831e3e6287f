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


# ----------------------------------------------------------------------------- damaged TORCH_TRACE logs

LOG = Path(__file__).parent / "data" / "torch_trace" / "torch-2.13.0" / "tiny.log.gz"


def _log_lines() -> list[str]:
    import gzip

    return gzip.open(LOG, "rt", encoding="utf-8").read().split("\n")


def _corrupt_json(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if '"dynamo_start"' in ln)
    return lines[:i] + [lines[i][: len(lines[i]) // 2]] + lines[i + 1:]  # the header cut in half


def _md5_mismatch(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if ln.startswith("\t") and "def forward" in ln)
    return lines[:i] + [lines[i] + "  # edited"] + lines[i + 1:]


def _unknown_event(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if '"dynamo_start"' in ln)
    return lines[:i] + [lines[i].replace('{"dynamo_start"', '{"aot_brand_new_event"', 1)] + lines[i + 1:]


def _truncated(lines: list[str]) -> list[str]:
    i = max(i for i, ln in enumerate(lines) if '"inductor_output_code"' in ln)
    return lines[: i + 5]  # ends inside the output code's payload, with no newline


@dataclass
class LogCase:
    name: str
    damage: Optional[Callable[[list[str]], list[str]]]
    needles: tuple[str, ...]
    code: int = 2  # with --strict; 0 (a warning) without
    args: tuple[str, ...] = ()
    text: Optional[bytes] = None  # the file's bytes instead of a damaged log


LOG_CASES = [
    LogCase("corrupt_json", _corrupt_json, ("1 lines of the events file were not a record",)),
    LogCase("md5_mismatch", _md5_mismatch, ("1 payloads do not match their md5 (has_payload)",)),
    LogCase("unknown_event", _unknown_event, ("aot_brand_new_event ×1",)),
    LogCase("truncated_payload", _truncated, ("1 payload cut short (the log ends inside it)",)),
    # not readable at all: exit 2 with or without --strict
    LogCase("empty", None, ("holds no TORCH_TRACE record",), text=b""),
    LogCase("garbage", None, ("holds no TORCH_TRACE record", "3 lines not understood"), text=b"\x00\xff\x10\n" * 3),
    LogCase("bad_gzip", None, ("cannot read",), text=b"\x1f\x8b\x08\x00garbage"),
    LogCase("rank_of_a_file", lambda lines: lines, ("is rank 0's log, not rank 2's",), args=("--rank", "2")),
]


@pytest.mark.parametrize("case", LOG_CASES, ids=[c.name for c in LOG_CASES])
@pytest.mark.parametrize("strict", [False, True], ids=["warn", "strict"])
def test_damaged_logs(capsys, tmp_path, case, strict):
    path = tmp_path / ("dedicated_log_torch_trace_rank_0_x.log" + (".gz" if case.name == "bad_gzip" else ""))
    path.write_bytes(case.text if case.damage is None else "\n".join(case.damage(_log_lines())).encode())
    code, out, err = cli(capsys, "trace", str(path), "-s", "summary", *case.args, *(("--strict",) if strict else ()))
    assert "Traceback" not in err
    fatal = case.damage is None or case.args or strict
    errors = [ln for ln in err.splitlines() if ln.startswith("tcinspect: error:")]
    if fatal:
        assert code == 2 and out == "" and len(errors) == 1, (code, err)
        assert " — " in errors[0] and all(n in errors[0] for n in case.needles), errors[0]
    else:  # read, with one warning line on stderr; the report shows the same line
        warnings = [ln for ln in err.splitlines() if ln.startswith("tcinspect: warning:")]
        assert code == 0 and not errors and len(warnings) == 1, (code, err)
        assert all(n in warnings[0] for n in case.needles), warnings[0]
        assert "graphs" in out and "parse:" in out


def test_a_directory_without_rank_logs_and_a_missing_rank(capsys, tmp_path):
    import shutil

    shutil.copy(LOG, tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    shutil.copy(LOG, tmp_path / "dedicated_log_torch_trace_rank_1_x.log.gz")
    code, out, err = cli(capsys, "trace", str(tmp_path), "--rank", "5")
    assert code == 2 and out == "" and "holds no log of rank 5 (ranks 0-1)" in err and "Traceback" not in err
    code, out, err = cli(capsys, "trace", str(MODELS / "no_model.py"), "--rank", "1")
    assert code == 2 and "--rank picks one rank" in err


def test_a_rank_log_that_cannot_be_read_fails_that_rank_only(capsys, tmp_path):
    import shutil

    shutil.copy(LOG, tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    code, out, err = cli(capsys, "trace", str(tmp_path), "-s", "summary")
    errors = [ln for ln in err.splitlines() if ln.startswith("tcinspect: error:")]
    assert code == 2 and "Traceback" not in err and len(errors) == 1
    assert errors[0].startswith("tcinspect: error: rank 1 of 2: cannot read") and " — " in errors[0]
    assert "Ranks · 2 (TORCH_TRACE logs)" in out and "graphs" in out  # rank 0 is still shown
