"""Long node and kernel tables are cut to a limit in `trace`, with a line that says how to see the rest.

Hand-built reports (as bench/synthetic.py builds them): no torch compile.
"""

from __future__ import annotations

from builders.reports import make_report
from helpers import cli, render_text
from tcinspect import serialize
from tcinspect.render import table as render
from tcinspect.report import (
    AotGraphs,
    AotStage,
    DynamoGraph,
    DynamoStage,
    Graph,
    InductorStage,
    Kernel,
    Node,
    OutputCode,
    Report,
    SourceLocation,
    Stages,
    Target,
)


def big_report(nodes: int, kernels: int) -> Report:
    ns = tuple(Node("call_function", f"mul_{i}", "aten.mul.Tensor", f"mul_{i - 1}, {i}", "f32", ("64", "64"),
                    ("64", "1"), "cpu", SourceLocation("/src/model.py", 10 + i, "forward", f"x = x * {i}"))
               for i in range(nodes))
    graph = Graph("dynamo_output_graph", "", ns)
    ks = tuple(Kernel(f"cpp_fused_mul_{k}", "cpp", "cpp", (f"mul_{k}",), ("aten.mul",), ("/src/model.py:10",),
                      f"cpp_fused_mul_{k}(buf0)") for k in range(kernels))
    return make_report(torch_version="synthetic", target=Target(kind="model", path="synthetic.py"),
                       stages=Stages(DynamoStage("ok", "", (DynamoGraph("0/0", "forward", "/src/model.py", 1, graph),)),
                                     AotStage("ok", "", (AotGraphs("0/0", forward=Graph("aot_forward_graph", "", ns)),)),
                                     InductorStage("ok", "", (OutputCode("0/0", "0_forward", "forward", "", ks, graph),))),
                       calls=1)


def row_indexes(out: str) -> set[int]:
    """The `#` column of every table row printed."""
    return {int(line[1:].split("│")[0]) for line in out.splitlines()
            if line.startswith("│") and line[1:].split("│")[0].strip().isdigit()}


def test_a_10000_node_graph_shows_50_rows_and_says_how_many_are_left_out():
    out = render_text(render.trace(big_report(10_000, 120)), 120)
    assert out.count("… 9,950 more rows (use --all or --format yaml)") == 2  # the Dynamo and the AOT graph
    assert "… 70 more rows (use --all or --format yaml)" in out  # 120 kernels
    assert row_indexes(out) == set(range(50))
    # three tables of 50 rows (each row one or two lines): the terminal is not flooded
    assert len(out.splitlines()) < 600, len(out.splitlines())


def test_all_rows_shows_every_row_and_no_summary_line():
    out = render_text(render.trace(big_report(120, 60), limit=None), 120)
    assert "more rows" not in out
    assert row_indexes(out) == set(range(120))


def test_a_table_at_the_limit_is_not_cut():
    out = render_text(render.trace(big_report(render.ROW_LIMIT, render.ROW_LIMIT)), 120)
    assert "more rows" not in out
    assert row_indexes(out) == set(range(render.ROW_LIMIT))


def test_node_and_kernel_tables_are_whole_unless_given_a_limit():
    # `codegen`'s catalog and `export`'s graph call these without a limit
    rep = big_report(80, 80)
    assert row_indexes(render_text(render.node_table(rep.stages.dynamo.graphs[0].graph, "g"), 120)) == set(range(80))
    assert row_indexes(render_text(render.kernel_table(rep.stages.inductor.outputs[0].kernels, "k"), 120)) == set(range(80))
    cut = render_text(render.node_table(rep.stages.dynamo.graphs[0].graph, "g", limit=10), 120)
    assert row_indexes(cut) == set(range(10)) and "… 70 more rows" in cut


def test_trace_all_flag_on_a_saved_report(capsys, tmp_path):
    saved = tmp_path / "big.json"
    serialize.write_atomic(saved, serialize.dumps(big_report(1_050, 10), "json"))
    code, out, err = cli(capsys, "trace", str(saved), "--stage", "dynamo")
    assert code == 0, err
    assert "… 1,000 more rows (use --all or --format yaml)" in out
    assert row_indexes(out) == set(range(50))
    code, out, err = cli(capsys, "trace", str(saved), "--stage", "dynamo", "--all")
    assert code == 0, err
    assert "more rows" not in out
    assert row_indexes(out) == set(range(1_050))
