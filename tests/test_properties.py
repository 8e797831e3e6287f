"""Property-based: on generated straight-line models with graph breaks at random points, the
report's graph, break and node counts equal what a counting backend saw in the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcinspect.capturing.custom import load_callable
from tcinspect.report import CompileOptions

pytestmark = pytest.mark.torch

BACKENDS = Path(__file__).resolve().parent / "models" / "backends.py"
ORACLE = f"{BACKENDS}:recording_backend"

OPS = ["torch.sin(x)", "torch.cos(x)", "torch.relu(x)", "torch.tanh(x)", "x + 1", "x * 2", "torch.sigmoid(x)",
       "-x", "x.abs()", "x - 0.5"]
BREAK = "torch._dynamo.graph_break()"

steps = st.lists(st.one_of(st.sampled_from(OPS), st.just(BREAK)), min_size=1, max_size=12)


def build(body: list[str], index: int):
    lines = ["def model(x):"]
    for step in body:
        lines.append(f"    {step}" if step == BREAK else f"    x = {step}")
    lines.append("    return x")
    namespace: dict = {}
    exec(compile("import torch\n" + "\n".join(lines) + "\n", f"<generated-{index}>", "exec"), namespace)
    return namespace["model"]


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(body=steps)
def test_counts_match_a_counting_backend(body):
    import torch

    import tcinspect

    oracle = load_callable(ORACLE, "--backend").__globals__["GRAPHS"]
    oracle.clear()
    rep = tcinspect.capture(build(body, len(body)), torch.randn(8), compile=CompileOptions(backend=ORACLE), quiet=True)
    graphs = rep.stages.dynamo.graphs
    assert rep.ok
    assert len(graphs) == len(oracle)  # one report graph per graph the backend was handed
    assert [len(g.graph.nodes) for g in graphs] == [n for n, _ in oracle]
    assert [g.graph.op_count for g in graphs] == [ops for _, ops in oracle]
    assert len(rep.stages.dynamo.graph_breaks) == body.count(BREAK)
    # and the graphs are where the ops are: every non-empty run of ops between breaks is one graph
    segments = [seg for seg in "".join("B" if s == BREAK else "o" for s in body).split("B") if seg]
    assert len(graphs) == len(segments)
