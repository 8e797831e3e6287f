"""The bad-input corpus: every model file that can go wrong, its exit code and its one-line message.

Each row runs the real CLI (in-process, through its error boundary; `--timeout` rows in a child
process). A row with exit 2 must print nothing on stdout (nothing was captured); a row with exit
3 or 4 must still show the stages recorded before the failure. No row may print a traceback.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest
import yaml

from helpers import MODELS, SAMPLES, cli


@dataclass
class Case:
    file: str  # relative to tests/models (or an absolute path / a path that does not exist)
    code: int
    needles: tuple[str, ...]
    args: tuple[str, ...] = ("--backend", "eager")
    command: str = "trace"
    check: Optional[Callable[[str, str, Path], None]] = field(default=None, repr=False)
    #: compile in a child process, the CLI's default (the other rows compile in pytest's process)
    isolated: bool = False


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
    # a pass that puts back an op Inductor only decomposes (aten.silu): decomposed again, so Inductor lowers it
    Case(str(SAMPLES / "silu_pass.py"), 0, (),
         ("--pass", f"{SAMPLES / 'silu_pass.py'}:rewrite_silu", "-s", "summary,aot"),
         check=lambda out, err, tmp: None if "decomposed for Inductor: aten.silu.default" in out else pytest.fail(out)),
    Case("failing_backend.py", 3, ("lowering failed on purpose",), ("--backend", "tcinspect_failing")),
    Case("segfault.py", 4, ("the capture process crashed (killed by SIGSEGV) in model at segfault.py:9",),
         ("--backend", "eager", "--timeout", "120", "-s", "summary"),
         check=lambda out, err, tmp: None if "dynamo          failed" in out else pytest.fail(out)),
    # a native crash without --timeout: the default child process turns it into a report naming the line
    Case("aborts.py", 4, ("the capture process crashed (killed by SIGABRT) in model at aborts.py:9",),
         ("--backend", "eager", "-s", "summary"), isolated=True,
         check=lambda out, err, tmp: None if "dynamo          failed" in out else pytest.fail(out)),
    # Dynamo re-raises the typo at the `def` line; the error names the line of the typo
    Case("typo_in_forward.py", 2, ("typo_in_forward.py:12: the model raised AttributeError", "rleu")),
    # the file sets no device: the message must say --device asked for it, not the file
    Case("no_device.py", 2, ("--device cuda was asked for, but this machine has no CUDA GPU",),
         ("--backend", "eager", "--device", "cuda")),
    Case("takes_no_arguments.py", 2, ("unexpected argument 'extra'", "is a model file"), ("extra", "--backend", "eager")),
    # breaks compiles with Dynamo alone: the child records the break at line 7 a few seconds in, then hangs
    Case("hangs.py", 4, ("ran past --timeout 12 s",), ("--timeout", "12"), command="breaks",
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
    if case.isolated:
        monkeypatch.delenv("TCINSPECT_IN_PROCESS")
    if case.file == "no_device.py":
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
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


# ----------------------------------------------------------------------------- misuse: outputs and saved reports
#
# Each row builds its paths in a temporary directory, runs the real CLI, and checks the exit code, the
# one-line error and that every path tcinspect did not own is as it was. Output paths never touch the
# real /dev/null or /dev/full: a device node is a copy of /dev/null's (1, 3) made with mknod (root only).


@dataclass
class Misuse:
    name: str
    #: builds the paths in tmp and returns the CLI arguments; ``report`` is a saved report to read
    setup: Callable[[Path, Path], list[str]]
    code: int
    needles: tuple[str, ...] = ()
    #: checks the paths afterwards (and stdout)
    after: Optional[Callable[[Path, str], None]] = field(default=None, repr=False)
    root_only: bool = False


def _char_device(p: Path) -> None:
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the kernel's null device, at a throw-away path


def _fifo_reader(p: Path) -> dict:
    """A FIFO at ``p`` with a reader thread that keeps what it reads in ``box["data"]``."""
    os.mkfifo(p)
    box: dict = {}

    def read() -> None:
        with open(p, "rb") as fh:
            box["data"] = fh.read()

    box["thread"] = threading.Thread(target=read, daemon=True)
    box["thread"].start()
    return box


_FIFOS: dict[str, dict] = {}


def _is_report(data: bytes) -> bool:
    return yaml.safe_load(data)["schema_version"] == 1


def _setup_chardev(tmp: Path, rep: Path) -> list[str]:
    _char_device(tmp / "null")
    return ["trace", str(rep), "-f", "yaml", "-o", str(tmp / "null")]


def _after_chardev(tmp: Path, out: str) -> None:
    assert stat.S_ISCHR(os.stat(tmp / "null").st_mode) and os.stat(tmp / "null").st_rdev == os.makedev(1, 3)


def _setup_fifo(tmp: Path, rep: Path) -> list[str]:
    _FIFOS[str(tmp)] = _fifo_reader(tmp / "pipe")
    return ["trace", str(rep), "-f", "yaml", "-o", str(tmp / "pipe")]


def _after_fifo(tmp: Path, out: str) -> None:
    box = _FIFOS.pop(str(tmp))
    box["thread"].join(10)
    assert stat.S_ISFIFO(os.stat(tmp / "pipe").st_mode) and _is_report(box["data"])


def _setup_link(tmp: Path, rep: Path) -> list[str]:
    (tmp / "real.yaml").write_text("old\n")
    (tmp / "link.yaml").symlink_to("real.yaml")
    return ["trace", str(rep), "-f", "yaml", "-o", str(tmp / "link.yaml")]


def _after_link(tmp: Path, out: str) -> None:
    assert os.readlink(tmp / "link.yaml") == "real.yaml" and _is_report((tmp / "real.yaml").read_bytes())
    # no temp file left (tcinspect-cache: tcinspect's own report cache, where a YAML report's JSON twin goes)
    assert sorted(p.name for p in tmp.iterdir() if p.name != "tcinspect-cache") == ["link.yaml", "real.yaml", "report.yaml"]


def _setup_dangling(tmp: Path, rep: Path) -> list[str]:
    (tmp / "link.json").symlink_to("new.json")
    return ["trace", str(rep), "-o", str(tmp / "link.json")]


def _after_dangling(tmp: Path, out: str) -> None:
    assert (tmp / "link.json").is_symlink() and json.loads((tmp / "new.json").read_text())["schema_version"] == 1


def _setup_dir(tmp: Path, rep: Path) -> list[str]:
    (tmp / "out.yaml").mkdir()
    return ["trace", str(rep), "-o", str(tmp / "out.yaml")]


def _after_dir(tmp: Path, out: str) -> None:
    assert (tmp / "out.yaml").is_dir() and not any((tmp / "out.yaml").iterdir())


def _setup_socket(tmp: Path, rep: Path) -> list[str]:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp / "s"))
    sock.close()
    return ["trace", str(rep), "-o", str(tmp / "s")]


def _after_socket(tmp: Path, out: str) -> None:
    assert stat.S_ISSOCK(os.lstat(tmp / "s").st_mode)


def _setup_junit_chardev(tmp: Path, rep: Path) -> list[str]:
    _char_device(tmp / "null")
    return ["check", str(rep), "--max-graphs", "9", "--junit", str(tmp / "null")]


def _setup_junit_dir(tmp: Path, rep: Path) -> list[str]:
    (tmp / "junit").mkdir()
    return ["check", str(rep), "--max-graphs", "9", "--junit", str(tmp / "junit")]


def _setup_baseline_link(tmp: Path, rep: Path) -> list[str]:
    (tmp / "locks").mkdir()
    (tmp / "lock.yaml").symlink_to("locks/real.yaml")
    return ["check", str(rep), "--baseline", str(tmp / "lock.yaml"), "--update"]


def _after_baseline_link(tmp: Path, out: str) -> None:
    assert (tmp / "lock.yaml").is_symlink()
    assert yaml.safe_load((tmp / "locks" / "real.yaml").read_text())["models"]


def _setup_baseline_dir(tmp: Path, rep: Path) -> list[str]:
    (tmp / "lock.yaml").mkdir()
    return ["check", str(rep), "--baseline", str(tmp / "lock.yaml"), "--update"]


def _damaged(edit: Callable[[str], str]) -> Callable[[Path, Path], list[str]]:
    def setup(tmp: Path, rep: Path) -> list[str]:
        text = rep.read_text()
        damaged = edit(text)
        assert damaged != text
        (tmp / "damaged.yaml").write_text(damaged)
        return ["trace", str(tmp / "damaged.yaml"), "-s", "summary"]

    return setup


def _replace_once(old: str, new: str) -> Callable[[str], str]:
    return lambda text: text.replace(old, new, 1)


def _drop_line(start: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = text.splitlines(keepends=True)
        i = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(start))
        return "".join(lines[:i] + lines[i + 1:])

    return edit


MISUSE = [
    Misuse("output-char-device", _setup_chardev, 0, after=_after_chardev, root_only=True),
    Misuse("output-fifo", _setup_fifo, 0, after=_after_fifo),
    Misuse("output-symlink", _setup_link, 0, after=_after_link),
    Misuse("output-dangling-symlink", _setup_dangling, 0, after=_after_dangling),
    Misuse("output-stdout", lambda tmp, rep: ["trace", str(rep), "-o", "-", "-f", "json"], 0,
           after=lambda tmp, out: None if json.loads(out)["schema_version"] == 1 else pytest.fail(out)),
    Misuse("output-directory", _setup_dir, 2, ("out.yaml is a directory, which tcinspect does not write",
                                              "give -o a file name"), after=_after_dir),
    Misuse("output-socket", _setup_socket, 2, ("s is a socket",), after=_after_socket),
    Misuse("junit-char-device", _setup_junit_chardev, 0, after=_after_chardev, root_only=True),
    Misuse("junit-directory", _setup_junit_dir, 2, ("junit is a directory", "give --junit a file name"),
           after=lambda tmp, out: None if not any((tmp / "junit").iterdir()) else pytest.fail("written into")),
    Misuse("perfetto-char-device", lambda tmp, rep: (_char_device(tmp / "null"), [
        "compile-time", str(rep), "-f", "json", "--perfetto", str(tmp / "null")])[1], 0, after=_after_chardev,
           root_only=True),
    Misuse("perfetto-directory", lambda tmp, rep: ((tmp / "trace.json").mkdir(), [
        "compile-time", str(rep), "-f", "json", "--perfetto", str(tmp / "trace.json")])[1], 2,
           ("trace.json is a directory", "give --perfetto a file name"),
           after=lambda tmp, out: None if (tmp / "trace.json").is_dir() else pytest.fail("replaced")),
    Misuse("baseline-symlink", _setup_baseline_link, 0, after=_after_baseline_link),
    Misuse("baseline-directory", _setup_baseline_dir, 2, ("lock.yaml is a directory", "--baseline"),
           after=lambda tmp, out: None if (tmp / "lock.yaml").is_dir() else pytest.fail("replaced")),
    Misuse("report-cut-at-20kb", _damaged(lambda t: t[:20_000]), 2, ("damaged.yaml: ",)),
    Misuse("report-cut-at-a-third", _damaged(lambda t: t[:len(t) // 3]), 2, ("damaged.yaml: ",)),
    Misuse("report-cut-at-two-thirds", _damaged(lambda t: t[:2 * len(t) // 3]), 2, ("damaged.yaml: ",)),
    Misuse("report-cut-at-a-line-end", _damaged(lambda t: t[:t.index("\n", len(t) // 2) + 1]), 2,
           ("damaged.yaml: ",)),
    Misuse("report-cut-before-timings", _damaged(lambda t: t[:t.index("\ntimings:") + 1]), 2,
           ("damaged.yaml: ", "'report.timings'")),
    Misuse("report-renamed-field", _damaged(_replace_once("    kernels:", "    kernals:")), 2,
           ("damaged.yaml: missing key 'report.stages.inductor.outputs[0].kernels'",)),
    Misuse("report-dropped-field", _damaged(_drop_line("guard_type:")), 2,
           ("damaged.yaml: missing key 'report.stages.dynamo.graphs[0].guards[0].guard_type'",)),
    Misuse("report-unknown-field", _damaged(_replace_once("\ncalls: 1\n", "\ncalls: 1\nkernel_count: 9\n")), 2,
           ("damaged.yaml: unknown key 'report.kernel_count'",)),
    Misuse("report-edited-summary", _damaged(lambda t: re.sub(r"(?m)^  kernels: \d+$", "  kernels: 999", t, count=1)),
           2, ("damaged.yaml: 'report.summary.kernels' is 999 but the report holds",)),
    Misuse("report-edited-status", _damaged(_replace_once("\nstatus: ok\n", "\nstatus: failed\n")), 2,
           ("damaged.yaml: 'report.status' is 'failed' but the stages say 'ok'",)),
    Misuse("report-bad-stage-status", _damaged(_replace_once("    status: ok\n", "    status: fine\n")), 2,
           ("'report.stages.dynamo.status' is 'fine'",)),
]


@pytest.fixture(scope="module")
def saved_report(tmp_path_factory, tiny_report):
    """A real report (sample_models/tiny.py through Inductor), saved as YAML."""
    from tcinspect import serialize

    p = tmp_path_factory.mktemp("saved") / "report.yaml"
    p.write_text(serialize.dumps(tiny_report, "yaml"))
    return p


def test_misuse_covers_outputs_and_damaged_reports():
    names = [m.name for m in MISUSE]
    assert len(set(names)) == len(names)
    assert sum(n.startswith(("output-", "junit-", "baseline-")) for n in names) >= 10
    assert sum(n.startswith("report-") for n in names) >= 10


@pytest.mark.parametrize("case", MISUSE, ids=[m.name for m in MISUSE])
def test_misuse(capsys, tmp_path, monkeypatch, saved_report, case):
    if case.root_only and os.geteuid() != 0:
        pytest.skip("mknod needs root (CI runs as root)")
    monkeypatch.chdir(tmp_path)
    shutil.copy(saved_report, tmp_path / "report.yaml")
    args = case.setup(tmp_path, tmp_path / "report.yaml")
    code, out, err = cli(capsys, *args)
    assert code == case.code, (code, err[-2000:])
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("tcinspect: error:")]
    assert len(errors) == (1 if case.code else 0), err
    for needle in case.needles:
        assert needle in errors[0], (needle, errors[0])
    if case.code == 2:
        assert out == "" and " — " in errors[0]
    assert (tmp_path / "report.yaml").read_bytes() == saved_report.read_bytes()  # the input is never touched
    if case.after is not None:
        case.after(tmp_path, out)


# ----------------------------------------------------------------------------- damaged TORCH_TRACE logs

LOG = Path(__file__).parent / "data" / "torch_trace" / "torch-2.13.0" / "tiny.log.gz"


def _log_lines() -> list[str]:
    import gzip

    return gzip.open(LOG, "rt", encoding="utf-8").read().split("\n")


def _corrupt_json(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if '"dynamo_start"' in ln)
    return [*lines[:i], lines[i][: len(lines[i]) // 2], *lines[i + 1:]]  # the header cut in half


def _md5_mismatch(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if ln.startswith("\t") and "def forward" in ln)
    return [*lines[:i], lines[i] + "  # edited", *lines[i + 1:]]


def _unknown_event(lines: list[str]) -> list[str]:
    i = next(i for i, ln in enumerate(lines) if '"dynamo_start"' in ln)
    return [*lines[:i], lines[i].replace('{"dynamo_start"', '{"aot_brand_new_event"', 1), *lines[i + 1:]]


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
