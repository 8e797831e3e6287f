"""tcinspect's own work grows linearly with the graph, and each capture says what it cost."""

from __future__ import annotations

import time

from tcinspect.parse.fxgraph import parse_graph


def readable_graph(nodes: int) -> str:
    """A Dynamo-style print_readable of a chain of ``nodes`` multiplications."""
    lines = ["class GraphModule(torch.nn.Module):",
             '    def forward(self, L_x_: "f32[8, 16][16, 1]cpu"):',
             "        l_x_ = L_x_",
             '        mul_0: "f32[8, 16][16, 1]cpu" = l_x_ * 1.001;  l_x_ = None']
    for i in range(1, nodes):
        lines.append(f"        # File: /src/model.py:{10 + i} in forward, code: x = torch.sin(x)")
        lines.append(f'        mul_{i}: "f32[8, 16][16, 1]cpu" = torch.sin(mul_{i - 1});  mul_{i - 1} = None')
    lines.append(f"        return (mul_{nodes - 1},)")
    return "\n".join(lines) + "\n"


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def test_parse_graph_is_linear_in_the_node_count():
    small, large = readable_graph(1_000), readable_graph(10_000)
    graph = parse_graph("dynamo_output_graph", large)
    assert len(graph.nodes) == 10_000 + 2  # the placeholder, the nodes, the output
    assert graph.nodes[5].op == "call_function" and graph.nodes[5].target == "torch.sin"
    assert graph.nodes[5].args == "mul_3"
    # 10x the nodes: about 10x the time when linear, about 100x when quadratic (a set of every
    # earlier node's name built per node made the 10,000-node case take 1.4 s instead of 0.14 s: a ratio of
    # about 50 on these sizes)
    ratio = best_of(3, lambda: parse_graph("g", large)) / best_of(3, lambda: parse_graph("g", small))
    assert ratio < 35, ratio


def test_a_capture_records_its_own_cost(breaks_report):
    timings = dict(breaks_report.timings)
    assert set(timings) >= {"capture_s", "record_s", "assemble_s"}
    # the handler runs inside the compile; the report is assembled after it
    assert 0 < timings["record_s"] < timings["capture_s"]
    assert timings["assemble_s"] > 0


def test_a_cache_entry_is_compact_json_that_reads_back_the_same(tmp_path):
    from tcinspect import cache, serialize
    from test_render_limits import big_report

    rep = big_report(200, 20)
    path = cache.store(tmp_path / "model.py", "key", rep)
    text = path.read_text()
    assert text.count("\n") == 1  # json's C encoder (no indent): several times faster on large reports
    import json

    data = json.loads(text)
    data.pop(cache.SOURCES_KEY)  # the entry's record of the files the compile traced, beside the report
    data.pop(cache.INDUCTOR_KEY)  # and of what the user's Inductor cache held for its look-ups
    assert serialize.from_dict(data) == rep
    assert serialize.loads(serialize.dumps(rep, "json")) == rep  # -o report.json stays indented
    assert serialize.dumps(rep, "json").count("\n") > 200
