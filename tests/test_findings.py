"""The answer on the first screen: every command leads with its verdict and the findings that need action, ranked by
what they cost, each with the user's line and a fix; a "your code" column never shows torch's own frames.

Hand-built reports for the ranking and the "your code" split; recorded TORCH_TRACE logs and eager / aot_eager
captures of the real models (GPT-2 over four lengths, nanoGPT with a print, rank directories) for the first 40
lines at 120 columns. No Inductor compile here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from builders.reports import make_report
from helpers import DATA, MODELS, cli, render_text
from tcinspect.analysis import findings
from tcinspect.analysis.breaks import break_costs
from tcinspect.render import findings as findings_view
from tcinspect.render import guards as guards_view
from tcinspect.report import (
    CompileMetrics,
    CompileTime,
    CompileTimeFinding,
    Coverage,
    CudaGraphs,
    CudaGraphUse,
    DynamoStage,
    EagerIsland,
    FrameCoverage,
    GraphBreak,
    Memory,
    MemoryMeasurement,
    Recompile,
    RuntimeCoverage,
    SourceLocation,
    Stages,
)

GPT2_LOG = DATA / "torch_trace" / "torch-2.13.0" / "gpt2_train_lengths.log.gz"
DDP_BRANCH = DATA / "torch_trace" / "torch-2.13.0" / "ddp_rank_branch"
#: the first screen: a terminal of about 40 lines at 120 columns
SCREEN = 40

#: one of torch's own files as a "your code" cell would name it (torch shortens its paths: "_dynamo/x.py:12")
TORCH_FRAME = re.compile(r"\b(_dynamo|_inductor|_functorch|_subclasses|_refs|fx|nn/modules)/[\w/]+\.py:\d+")


def _first_screen(out: str) -> str:
    return "\n".join(out.splitlines()[:SCREEN])


# ----------------------------------------------------------------------------- the ranking


def _loc(line: int, code: str) -> SourceLocation:
    return SourceLocation("m.py", line, "forward", code)


def _ranked_report():
    """A report with one of each kind of finding, each listed out of rank order."""
    brk = GraphBreak("0/0", _loc(12, "print(x)"), "Failed to trace builtin operator", explanation="print",
                     hints=("Remove the print",), fix="Remove the print")
    cheap = GraphBreak("2/0", _loc(20, "y.item()"), "Unsupported Tensor.item() call", fix="keep it a tensor")
    costly = GraphBreak("3/0", _loc(30, "if x.sum() > 0:"), "Data-dependent branching", fix="use torch.cond")
    frames = (FrameCoverage("0/0", "forward", "m.py", 10, 0, eager=True, fail_type="Unsupported",
                            reason="Failed to trace builtin operator", user_frame=_loc(12, "print(x)")),
              FrameCoverage("2/0", "block", "m.py", 18, 5), FrameCoverage("3/0", "head", "m.py", 28, 7))
    runtime = RuntimeCoverage(ops=40, compiled_ops=20, eager_ops=20,
                              islands=(EagerIsland("m.py", 30, "head", ops=9), EagerIsland("m.py", 20, "block", ops=2),
                                       EagerIsland("m.py", 11, "forward", ops=9)))
    return make_report(
        stages=Stages(dynamo=DynamoStage(
            status="ok", graph_breaks=(cheap, costly, brk),
            recompiles=(Recompile("4/1", "tail", ("4/0: L['n'] == 3",), input_set=1,
                                  suggestion="pass n as a tensor"),))),
        compiles=(CompileMetrics("4/0", "tail", "m.py", 40, entire_frame_compile_time_s=1.0),
                  CompileMetrics("4/1", "tail", "m.py", 40, entire_frame_compile_time_s=2.5)),
        coverage=Coverage("counters", 12, 2, 1, frames=frames, runtime=runtime),
        cudagraphs=CudaGraphs(graphs=(CudaGraphUse("4/0", "forward", "skipped", reason="mutated inputs (1 instances)",
                                                   user_lines=("m.py:41",)),)),
        compile_time=CompileTime(findings=(CompileTimeFinding("cache_bypass", "4/0", 3.0,
                                                              "FX graph cache bypassed for 4/0 forward: a custom pass",
                                                              "give the pass a uuid()"),)),
        memory=Memory(measured=MemoryMeasurement("H100", "max_memory_allocated", compiled_peak=300, eager_peak=200)))


def test_findings_rank_by_kind_then_cost():
    rep = _ranked_report()
    found = findings.findings(rep)
    kinds = [f.kind for f in found]
    assert kinds == ["eager", "graph_break", "graph_break", "recompile", "cudagraph_skip", "cache", "memory"]
    assert kinds == sorted(kinds, key=findings.KINDS.index)
    eager, first_break, second_break, recompile, skip, cache, memory = found
    # the frame run eagerly carries its break's fix (torch's own hint) and the user's line torch gave up at
    assert eager.what.startswith("forward (m.py:10) runs eagerly") and eager.where == "m.py:12 `print(x)`"
    assert (eager.fix, eager.fix_from, eager.torch_says) == ("Remove the print", "torch",
                                                             "Failed to trace builtin operator")
    assert "9 ATen ops of the measured call ran eagerly" in eager.cost
    # that break is not said twice; the others in break_costs' order: more eager ops first
    assert [d.first.user_frame.line for d, c in break_costs(rep) if not c.frame_ran_eagerly] == [30, 20]
    assert (first_break.where, second_break.where) == ("m.py:30 `if x.sum() > 0:`", "m.py:20 `y.item()`")
    assert first_break.cost.startswith("9 ATen ops") and second_break.cost.startswith("2 ATen ops")
    assert (first_break.fix_from, first_break.fix) == ("tcinspect", "use torch.cond")
    # the recompile: which call, torch's failed guard quoted as torch's, its compile time, the fix
    assert recompile.what == "tail (m.py:40) recompiled once (4/1) at input_sets[0]"
    assert (recompile.torch_says, recompile.cost, recompile.fix) == ("4/0: L['n'] == 3", "2.50 s compiling",
                                                                    "pass n as a tensor")
    assert skip.torch_says.startswith("mutated inputs") and skip.where == "m.py:41" and "mutat" in skip.fix
    assert cache.what.startswith("FX graph cache bypassed") and cache.fix == "give the pass a uuid()"
    assert memory.what.startswith("the compiled step's memory peak is 1.50×")
    doc = findings.document(rep)
    assert [d["kind"] for d in doc] == kinds and set(doc[0]) == {"kind", "what", "torch_says", "cost", "where",
                                                                 "fix", "fix_from", "detail"}


def test_the_block_says_the_verdict_then_at_most_shown_findings():
    rep = _ranked_report()
    text = render_text(findings_view.block(rep, limit=3), 120)
    lines = text.splitlines()
    assert lines[0].startswith("Findings  1 frame runs eagerly · 3 graph breaks · 1 recompile")
    assert "50% of the measured call's ATen ops ran compiled" in " ".join(text.split())
    assert "1. forward (m.py:10) runs eagerly" in text and "torch's hint: Remove the print" in text
    assert "4." not in text and "+ 4 more" in text
    clean = findings_view.block(make_report(stages=Stages(dynamo=DynamoStage(status="ok"))))
    assert "nothing needs action" in render_text(clean, 120)


def test_a_failed_capture_leads_with_its_failure():
    from tcinspect.report import Failure

    rep = _ranked_report().replace(failure=Failure("stage", "Inductor failed: boom", "run with --backend aot_eager"),
                                   error="Inductor failed: boom")
    first = findings.findings(rep)[0]
    assert (first.kind, first.what, first.fix) == ("failure", "Inductor failed: boom", "run with --backend aot_eager")
    assert findings.verdict(rep) == "the capture failed: Inductor failed: boom"


# ----------------------------------------------------------------------------- "your code"


@pytest.mark.parametrize(("recorded", "code", "internal"), [
    ("_dynamo/output_graph.py:1135 in init_ambient_guards", "", True),
    ("return iter(self._modules.values())  # nn/modules/container.py:410 in __iter__", "", True),
    ("x = y.sum()  # /opt/venv/lib/python3.11/site-packages/torch/_refs/__init__.py:88 in sum", "", True),
    ("if input_ids is not None:  # transformers/models/gpt2/modeling_gpt2.py:544 in forward (HINT: type tuple)",
     "if input_ids is not None:", False),
    ("h = self.block(h)  # model.py:12 in forward", "h = self.block(h)", False),
    ("/home/u/proj/model.py:12 in forward", "", False),
])
def test_your_code_is_the_users_line_or_says_torch_internal(recorded, code, internal):
    yc = findings.your_code(recorded)
    assert (yc.code, yc.internal) == (code, internal)
    cell = render_text(findings_view.your_code(recorded), 120)
    assert ("torch internal" in cell) == internal and not TORCH_FRAME.search(cell)
    assert internal or "model.py:12" in cell or "modeling_gpt2.py:544" in cell  # the user's file and line
    assert not internal or TORCH_FRAME.search(render_text(findings_view.your_code(recorded, all_rows=True), 200))


@pytest.mark.parametrize("note", ["(unknown source L['args'][0].stride()[0], please file a bug)",
                                  "implicit guard for float input due to NaN specialization in the framework"])
def test_torchs_own_note_reads_as_torchs(note):
    """A note torch wrote where a frame would be is torch's: "please file a bug" is torch asking, not tcinspect."""
    yc = findings.your_code(note)
    assert (yc.code, yc.internal) == ("", True) and yc.torch_text in note
    assert render_text(findings_view.your_code(note), 120).strip() == "torch's note"
    assert f"torch's note: \"{yc.torch_text}\"" in render_text(findings_view.your_code(note, all_rows=True), 300)


def test_no_your_code_cell_of_gpt2_shows_a_torch_frame():
    """GPT-2's guards and lambda guards (recorded, torch 2.13): torch's init_ambient_guards frames and its "please file
    a bug" note are in the log; the guards view names neither in its "your code" columns."""
    from helpers import recorded_report

    rep = recorded_report(GPT2_LOG)
    recorded = [x.user_code for g in rep.stages.dynamo.graphs for x in g.guards]
    assert any("init_ambient_guards" in u for u in recorded)
    assert any("please file a bug" in x.user_code for c in rep.guard_cost.compiles for x in c.lambda_guards)
    out = render_text(guards_view.guards(rep), 200)
    assert "your code" in out and "from your code" not in out and "torch internal" in out
    assert not TORCH_FRAME.search(out) and "please file a bug" not in out
    assert "modeling_gpt2.py:544" in out  # the user's (the model library's) line, with its file
    everything = render_text(guards_view.guards(rep, all_kinds=True), 240)
    assert "torch internal: _dynamo/output_graph.py" in everything and "torch's note: \"unknown source" in everything


# ----------------------------------------------------------------------------- the first screen


@pytest.mark.torch
def test_gpt2_guards_answers_why_it_recompiles_first(capsys, monkeypatch):
    """GPT-2 over four lengths, captured as `guards` captures (Dynamo only): the recompile, its failed guard and the
    fix are on the first screen, before the guard tables."""
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(capsys, "guards", str(MODELS / "gpt2_train_lengths.py"))
    assert code == 0
    screen = _first_screen(out)
    assert "Recompiles" in screen and "input_sets[0]" in screen
    assert "tensor 'args[0]' size mismatch" in screen and "expected 8, actual 16" in screen  # torch's words
    assert "mark_dynamic" in screen
    assert out.index("Recompiles") < out.index("0/0 · wrapper · ")  # before the first guard table


def test_gpt2_trace_opens_with_the_recompile_and_its_fix(capsys, monkeypatch):
    """The same run's TORCH_TRACE log (Inductor, recorded): `trace` opens with the findings block."""
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(capsys, "trace", str(GPT2_LOG))
    assert code == 0
    screen = " ".join(_first_screen(out).split())
    assert "Findings no frame runs eagerly · no graph break · 1 recompile" in screen
    assert "1. wrapper (generic.py:1030) recompiled once (0/1)" in screen
    assert "size mismatch at index 1. expected 8, actual 16" in screen and "mark_dynamic" in screen
    assert out.index("Findings") < out.index("Summary") < out.index("dynamo_output_graph")


@pytest.mark.torch
def test_nanogpt_trace_says_first_that_the_forward_runs_eagerly(capsys, monkeypatch):
    """nanoGPT with a print in its block loop, through aot_eager: torch gives up on GPT.forward; the first screen
    names the frame, the line it gave up at and the fix."""
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(capsys, "trace", str(MODELS / "nanogpt_print.py"), "--backend", "aot_eager")
    assert code == 0
    screen = " ".join(_first_screen(out).split())
    assert "Findings 1 frame runs eagerly" in screen
    assert "1. forward (nanogpt_print.py:54) runs eagerly" in screen
    assert "at nanogpt_print.py:60 `print(x.shape)`" in screen and "Remove the print" in screen


def test_rank_logs_say_first_which_ranks_differ(capsys, monkeypatch):
    """Two ranks, rank 1 breaking at a print (recorded, torch 2.13): what differs and what it does is on the
    first screen of `guards`, before the ranks table."""
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(capsys, "guards", str(DDP_BRANCH))
    assert code == 0
    screen = " ".join(_first_screen(out).split())
    assert "Findings 2 ranks" in screen and "ranks differ: rank 0 did not compile 5/0, 6/0" in screen
    assert "rank 1: graph break" in screen
    assert out.index("Findings") < out.index("Ranks · 2")


TLPARSE = Path("/work/.mirror/meta-pytorch+tlparse/repo")


@pytest.mark.skipif(not TLPARSE.exists(), reason="tlparse's test logs are not on this machine")
def test_seven_rank_logs_of_two_runs_say_so_and_what_differs(capsys, monkeypatch, tmp_path):
    """tlparse's multi_rank_runtime logs (7 ranks; ranks 5-6 are copies of another run's log): the first screen says
    the logs are not one run's, which ranks did not compile what, the hang it means, and why each group recompiled."""
    where = "tests/inputs/multi_rank_runtime"
    names = subprocess.run(["git", f"--git-dir={TLPARSE}", "ls-tree", "--name-only", "HEAD", f"{where}/"],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        blob = subprocess.run(["git", f"--git-dir={TLPARSE}", "show", f"HEAD:{name}"], capture_output=True,
                              check=True).stdout
        (tmp_path / name.rsplit("/", 1)[-1]).write_bytes(blob)
    monkeypatch.setenv("COLUMNS", "120")
    code, out, _ = cli(capsys, "guards", str(tmp_path))
    assert code == 0
    screen = " ".join(_first_screen(out).split())
    assert "these rank logs are not one run's" in screen
    assert "ranks 5-6 did not compile 0/2, 0/3 (inner), which ranks 0-4 compiled" in screen
    assert "hangs a live job" in screen
    # the frame they compiled is torch's own wrapper (torch/_dynamo/external_utils.py): named, its file not shown
    assert "ranks 0-4: inner recompiled 3 times" in screen and "ranks 5-6: inner recompiled once" in screen
    assert "external_utils.py" not in screen


def test_guards_yaml_adds_findings_and_keeps_its_keys(capsys):
    code, out, _ = cli(capsys, "guards", str(GPT2_LOG), "--format", "yaml")
    assert code == 0
    doc = yaml.safe_load(out)
    assert {"target", "dynamic", "summary", "graphs", "recompiles", "input_errors", "guard_cost"} <= set(doc)
    assert doc["findings"][0]["kind"] == "recompile"
    assert doc["findings"][0]["fix"] == doc["recompiles"][0]["suggestion"]
