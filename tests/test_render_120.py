"""Views read whole at 120 columns: codegen's columns, breaks' file:line and the user line that led
into a library, node tables that show ops first, plurals, compile time that adds up, and every
AOTAutograd wrapper artifact recognised."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.cells import cell_len

from builders.reports import make_report
from helpers import render_text
from tcinspect.analysis.breaks import breaks_document
from tcinspect.parse.breaks import parse_break
from tcinspect.render import breaks as breaks_view
from tcinspect.render import codegen, html, table
from tcinspect.report import DynamoStage, Stages, Target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_recorded_traces import report_of


def test_codegen_catalog_keeps_size_and_buffers_at_120_columns():
    rep = report_of("2.13.0", "gpt2_tiny")
    out = render_text(codegen.catalog(rep, limit=4), 120)
    assert max(cell_len(line) for line in out.splitlines()) <= 120
    header = next(line for line in out.splitlines() if "kernel" in line and "lines" in line)
    assert "size" in header and "buffers" in header
    first = rep.stages.inductor.outputs[0].kernels[0]
    assert first.buffers and first.buffers[0].split(":")[0] in out


_LIBRARY_BREAK = """Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call

Data-dependent branching
  Explanation: Detected data-dependent branching.

User code traceback:
  File "/home/u/proj/model.py", line 45, in forward
    h = self.block(h)
  File "/opt/venv/lib/python3.11/site-packages/transformers/models/big_bird/modeling_big_bird.py", line 1023, in forward
    if band_mask.any():
"""


def test_a_break_in_a_library_keeps_its_line_and_names_the_users_line():
    brk = parse_break(_LIBRARY_BREAK, "0/0")
    assert brk.user_frame is not None and brk.user_frame.line == 1023
    assert brk.model_frame is not None and (brk.model_frame.file, brk.model_frame.line) == ("/home/u/proj/model.py", 45)
    rep = make_report(target=Target(kind="trace"),
                      stages=Stages(dynamo=DynamoStage(graph_breaks=(brk,))))
    out = render_text(breaks_view.breaks(rep), 120)
    assert "modeling_big_bird.py:1023" in out and "↳ from model.py:45" in out
    title = next(line for line in out.splitlines() if "1. " in line and "╭" in line)
    assert "1. transformers/models/big_bird/modeling_big_bird.py:1023 — Data-dependent" in title
    assert "Reached from your code: /home/u/proj/model.py:45 in forward  h = self.block(h)" in out
    assert "0 graphs · 1 graph break (" in out
    doc = breaks_document(rep)["breaks"][0]
    assert (doc["line"], doc["model_frame"]["line"]) == (1023, 45)
    assert "reached from<dd>/home/u/proj/model.py:45 in forward" in html.render(rep)
    # six such rows, each in eight compiles, with long break types and function names (BigBird's shape):
    # every one keeps its file:line whole at 120 columns
    many = [replace(brk, compile_id=f"{j}/0",
                    user_frame=replace(brk.user_frame, line=1000 + i, function="bigbird_block_sparse_attention"),
                    break_type=f"Data-dependent branching in a long explanation of the kind torch writes {i}")
            for i in range(6) for j in range(8)]
    out = render_text(breaks_view.breaks(replace(rep, stages=Stages(dynamo=DynamoStage(graph_breaks=tuple(many))))), 120)
    assert all(f"modeling_big_bird.py:{1000 + i}" in out for i in range(6))


def test_a_real_break_in_a_helper_file_names_the_models_line(tmp_path):
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    (tmp_path / "helpers.py").write_text("def noisy(x):\n    y = x + 1\n    print('y')\n    return y * 2\n")
    (tmp_path / "model.py").write_text(
        "import torch\nfrom helpers import noisy\n\n\ndef model(x):\n    x = x.sin()\n    return noisy(x)\n\n\n"
        "example_inputs = (torch.randn(4),)\n")
    rep = capture_file(tmp_path / "model.py", compile=CompileOptions(backend="eager", backward=False))
    # Dynamo breaks at the print inside the inlined helper (then resumes there, compiling the helper's frame)
    brk = rep.stages.dynamo.graph_breaks[0]
    assert brk.user_frame is not None and brk.user_frame.file.endswith("helpers.py") and brk.user_frame.line == 3
    assert brk.model_frame is not None and brk.model_frame.file.endswith("model.py") and brk.model_frame.line == 7
    assert "↳ from model.py:7" in render_text(breaks_view.breaks(rep), 120)


def test_a_real_models_node_table_shows_ops_not_fifty_placeholders():
    rep = report_of("2.13.0", "gpt2_tiny")
    g = rep.stages.dynamo.graphs[0]
    inputs = [n for n in g.graph.nodes if n.op in ("placeholder", "get_attr")]
    assert len(inputs) > 8 and len(g.graph.nodes) > table.ROW_LIMIT
    out = render_text(table.dynamo(rep), 120)
    assert f"0–{len(inputs) - 1}" in out and f"{len(inputs)} inputs" in out
    first_op = next(n for n in g.graph.nodes if n.op not in ("placeholder", "get_attr"))
    assert f" {first_op.name} " in out
    rows = [line for line in out.splitlines() if line.startswith("│") or line[:3].strip().isdigit()]
    assert sum(" placeholder " in line for line in rows) <= 1


def test_compile_time_reads_as_parts_of_what_torch_recorded(tiny_report):
    """The total, then forward + backward (the backward compiled outside Dynamo's frame compile), then where the time
    went: torch's phase groups, which add up to the total."""
    from tcinspect.analysis.compile_time import run_groups

    rep = tiny_report
    forward = sum(c.entire_frame_compile_time_s for c in rep.compiles)
    backward = sum(t.total_s for t in rep.compile_time.compiles if t.part == "backward")
    text = " ".join(render_text(table.summary(rep), 120).split())
    assert f"compile time {rep.summary.compile_time_s:.2f} s forward {forward:.2f} s + backward {backward:.2f} s" in text
    groups = sorted(run_groups(rep.compile_time).items(), key=lambda kv: -kv[1])
    assert abs(sum(s for _, s in groups) - rep.summary.compile_time_s) < 0.01
    assert f"where it went: {table._GROUP_NAMES[groups[0][0]]} {groups[0][1]:.2f} s" in text


def test_hand_built_compile_time_with_a_backward_explains_itself():
    """A report with no span tree (an older report): where the time went is compilation_metrics' backend and
    Inductor times, the backward's Inductor time apart (it is compiled outside the backend call)."""
    from tcinspect.report import CompileMetrics, CompileTime, CompileTiming

    rep = make_report(target=Target(kind="trace"),
                      compiles=(CompileMetrics("0/0", entire_frame_compile_time_s=23.41, backend_compile_time_s=20.54,
                                               inductor_compile_time_s=17.40),),
                      compile_time=CompileTime(compiles=(CompileTiming("0/0", "backward", total_s=20.04, inductor_s=20.54),)))
    out = " ".join(render_text(table.summary(rep), 120).split())
    assert ("compile time 43.45 s forward 23.41 s + backward 20.04 s · where it went: backend 20.54 s (Inductor "
            "17.40 s of it), backward's Inductor 20.54 s") in out


@pytest.mark.parametrize("name", ["output_alias_wrapper", "mutation_epilogue"])
def test_aot_wrapper_artifacts_are_known(name):
    from tcinspect.parse import events

    assert events.is_known(name)


def test_an_output_aliasing_its_input_logs_no_unknown_event(monkeypatch):
    import torch

    from tcinspect.capturing.engine import capture
    from tcinspect.parse import events
    from tcinspect.report import CompileOptions

    def model(x):
        return x.view(-1), x * 2  # the first output aliases the input: AOTAutograd regenerates the view

    x = torch.randn(4, 4, requires_grad=True)
    rep = capture(model, x, compile=CompileOptions(backend="aot_eager"))
    assert rep.parse is None  # nothing unknown
    if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 15):
        return  # torch 2.15 logs no output_alias_wrapper for this model (seen on 2.15.0): nothing more to show
    monkeypatch.setattr(events, "KNOWN_UNREAD", events.KNOWN_UNREAD - {"output_alias_wrapper"})
    rep = capture(model, x, compile=CompileOptions(backend="aot_eager"))
    assert rep.parse is not None and "output_alias_wrapper" in [e.name for e in rep.parse.unknown_events]


def test_plurals():
    rep = report_of("2.13.0", "tiny")
    assert render_text(breaks_view.summary_line(rep), 120).startswith("1 graph · 0 graph breaks")
