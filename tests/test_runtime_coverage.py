"""Runtime coverage (capturing/runtime_coverage.py): the ATen ops one more call runs, compiled and eager by user line.

The truth for the eager islands is an independent count: the same model run plainly (no torch.compile) under
torch.profiler, each line of its file inside a span opened by a ``sys.settrace`` line hook, and every top-level ATen
op counted at the innermost line span around it; a backward node's ops count at the line of the forward op that
made it (autograd's sequence numbers, as the profiler records them). Eager islands run exactly the code a plain run
does, so on the lines Dynamo runs eagerly the two counts must agree op for op, and the lines Dynamo compiled must
have no island.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import copy
import runpy
import sys

import pytest
import torch

from helpers import MODELS
from tcinspect.capturing import outputs
from tcinspect.capturing.engine import capture, capture_file
from tcinspect.report import CompileOptions

EAGER = CompileOptions(backend="aot_eager")
LINE_SPAN = "oracle line "


@contextlib.contextmanager
def _line_spans(file: str):
    """Every line of ``file`` runs inside a profiler span named with its number (a plain run: no Dynamo to mind)."""
    spans = {}

    def on_line(frame, event, arg):
        span = spans.pop(frame, None)
        if span is not None:
            span.__exit__(None, None, None)
        if event == "line":
            span = torch.profiler.record_function(f"{LINE_SPAN}{frame.f_lineno}")
            span.__enter__()
            spans[frame] = span
        return on_line

    old = sys.gettrace()
    sys.settrace(lambda frame, event, arg: on_line if frame.f_code.co_filename == file else None)
    try:
        yield
    finally:
        sys.settrace(old)


def eager_ops_by_line(model, inputs, file: str) -> collections.Counter:
    """The oracle: top-level ATen ops by line of ``file`` in a plain eager forward (+ backward on the loss tcinspect
    sums), from torch.profiler's own events."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with _line_spans(file):
            out = model(*inputs)
        loss = outputs.scalar_loss(out)
        if loss is not None:
            loss.backward()

    def ancestors(e):
        while e.cpu_parent is not None:
            e = e.cpu_parent
            yield e

    def subtree(e):
        yield e
        for c in e.cpu_children:
            yield from subtree(c)

    top = [e for e in prof.events()
           if e.name.startswith("aten::") and not any(a.name.startswith("aten::") for a in ancestors(e))]
    counts: collections.Counter = collections.Counter()
    line_of_seq = {}
    for e in top:
        span = next((a for a in ancestors(e) if a.name.startswith(LINE_SPAN)), None)
        if span is not None:
            line = int(span.name[len(LINE_SPAN):])
            counts[line] += 1
            for d in subtree(e):
                if d.sequence_nr >= 0:
                    line_of_seq.setdefault(d.sequence_nr, line)
    for e in top:
        node = next((a for a in ancestors(e) if a.name.startswith("autograd::engine::evaluate_function: ")), None)
        if node is not None and node.sequence_nr in line_of_seq:
            counts[line_of_seq[node.sequence_nr]] += 1
    return counts


def function_lines(path, name: str) -> set[int]:
    """The lines of every function ``name`` in a file (its body, def line included)."""
    tree = ast.parse(path.read_text())
    return {n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == name
            for n in range(f.lineno, f.end_lineno + 1)}


def test_fully_compiled_mlp_runs_no_op_eagerly():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    x = torch.randn(16, 32)
    reference = copy.deepcopy(net)
    outputs.scalar_loss(reference(x)).backward()

    rep = capture(net, x, compile=EAGER)
    runtime = rep.coverage.runtime
    assert runtime is not None and runtime.not_measured == ""
    assert runtime.eager_ops == 0 and runtime.islands == ()
    assert runtime.ops == runtime.compiled_ops > 0
    # the measured call leaves the gradients as the capture's one call made them (not twice as large)
    for p, q in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


@pytest.fixture(scope="module")
def nanogpt_print():
    path = MODELS / "nanogpt_print.py"
    report = capture_file(path, compile=EAGER)
    ns = runpy.run_path(str(path))  # a fresh model for the plain run; its print() is the user's
    return path, report, eager_ops_by_line(ns["model"], ns["example_inputs"], str(path))


def test_nanogpt_print_falls_back_for_gpt_forward_only(nanogpt_print):
    path, rep, truth = nanogpt_print
    runtime = rep.coverage.runtime
    assert runtime.not_measured == ""
    gpt_forward = function_lines(path, "forward") & set(range(54, 66))  # GPT.forward
    assert min(gpt_forward) == next(f.line for f in rep.coverage.frames if f.eager)  # Dynamo's fallback frame
    islands = {i.line: i for i in runtime.islands}
    # the eager lines are GPT.forward's: positions and embeddings, ln_f, lm_head and the loss
    assert set(islands) == {line for line in truth if line in gpt_forward}
    assert {islands[n].code.split("(")[0] for n in islands} >= {"logits = self.lm_head", "x = self.transformer.ln_f"}
    assert all(i.file == str(path) and i.function == "forward" for i in runtime.islands)
    for line, island in islands.items():
        assert island.ops == truth[line] == sum(n for _, n in island.op_counts), line
    assert runtime.eager_ops == sum(truth[n] for n in islands)
    # the blocks ran compiled: their lines (Block.forward, attention) ran ops in the plain run, none eagerly here
    block_lines = function_lines(path, "forward") - gpt_forward
    assert any(truth[n] for n in block_lines) and not set(islands) & block_lines
    assert runtime.compiled_ops > 0 and runtime.ops == runtime.compiled_ops + runtime.eager_ops
    ops = [i.ops for i in runtime.islands]
    assert ops == sorted(ops, reverse=True)  # on a CPU the costliest island is the one with most ops


def test_ops_between_two_graphs_run_eagerly():
    path = MODELS / "runtime_break.py"
    rep = capture_file(path, compile=EAGER)
    ns = runpy.run_path(str(path))
    truth = eager_ops_by_line(ns["model"], ns["example_inputs"], str(path))
    runtime = rep.coverage.runtime
    assert len([g for g in rep.stages.dynamo.graphs if g.graph.op_count]) == 2  # a graph before, one after
    rescale = function_lines(path, "rescale")
    assert {(i.line, i.function) for i in runtime.islands} == {(n, "rescale") for n in truth if n in rescale}
    assert runtime.eager_ops == sum(truth[n] for n in rescale) > 0
    # the model's own lines ran in the two graphs (forward and backward): ops in a plain run, none eagerly here
    model_lines = function_lines(path, "model")
    assert any(truth[n] for n in model_lines) and not {i.line for i in runtime.islands} & model_lines
    assert runtime.compiled_ops > 0


class _CountsCalls(torch.nn.Module):
    """Guards on a Python int it changes on every call: each call compiles again."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


def test_a_call_that_would_compile_is_not_measured():
    rep = capture(_CountsCalls(), torch.randn(2, 4), compile=EAGER)
    runtime = rep.coverage.runtime
    assert "compile again" in runtime.not_measured and runtime.ops == 0
    assert [g.compile_id for g in rep.stages.dynamo.graphs] == ["0/0"]  # the capture's own compile, no other
