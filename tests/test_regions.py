"""Regional compilation: the report's regions against what torch's own graphs hold, in the same run.

A tiny Llama (4 decoder layers) compiled with aot_eager two ways: each layer's forward a
``nested_compile_region`` (the oracle: the invoke_subgraph nodes and identifiers in the graph Dynamo handed
a counting backend), and each layer compiled on its own as accelerate's ``compile_regions`` does it (the
oracle: the graphs that backend compiled and how often torch ran each).
"""

from __future__ import annotations

import sys

import pytest

from helpers import MODELS, render_text

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.torch]

BACKEND = f"{MODELS / 'regions_common.py'}:counting"


def _nested(name):
    from tcinspect.capturing import custom
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    graphs = custom.load_callable(BACKEND, "--backend").__globals__["GRAPHS"]
    graphs.clear()
    rep = capture_file(MODELS / name, compile=CompileOptions(backend=BACKEND), quiet=True)
    return rep, list(graphs)


def _blocks(monkeypatch, use_cache):
    from tcinspect.capturing.engine import capture_file

    monkeypatch.setenv("REGIONS_USE_CACHE", "1" if use_cache else "0")
    monkeypatch.syspath_prepend(str(MODELS))
    import regions_common

    regions_common.GRAPHS.clear()
    rep = capture_file(MODELS / "regions_blocks.py", quiet=True)
    return rep, [dict(g) for g in sys.modules["regions_common"].GRAPHS]


@pytest.fixture(scope="session")
def nested_reused():
    return _nested("regions_nested.py")


@pytest.fixture(scope="session")
def nested_first_differs():
    return _nested("regions_nested_first_differs.py")


def _agrees_with_torch(rep, graphs):
    """The region's calls are the Dynamo graph's invoke_subgraph nodes, in order, with torch's identifiers. The
    backend sees that graph after torch inlined the subgraphs called once (inline_single_use_invoke_subgraph):
    exactly the calls the report gives an identifier of their own."""
    assert rep.ok, rep.error
    (graph,) = [g for g in graphs if g["invokes"]]
    (region,) = rep.regions.regions
    assert region.kind == "nested_compile_region"
    shared = [c for c in region.region_calls if sum(d.subgraph == c.subgraph for d in region.region_calls) > 1]
    assert [(c.node, c.subgraph) for c in shared] == [(name, ident) for name, ident, _ in graph["invokes"]]
    once = [c.subgraph for c in region.region_calls if c not in shared]
    assert not ({ident for _, ident, _ in graph["invokes"]} & set(once))
    assert region.distinct == len({ident for _, ident, _ in graph["invokes"]}) + len(once)
    seen: set = set()
    for call in region.region_calls:
        assert call.reused == (call.subgraph in seen)
        seen.add(call.subgraph)
    assert region.calls == len(region.region_calls) == len(graph["invokes"]) + len(once)
    return region


def test_nested_region_reused_by_every_layer(nested_reused):
    region = _agrees_with_torch(*nested_reused)
    assert (region.calls, region.distinct, region.reuse) == (4, 1, 0.75)
    assert [c.module for c in region.region_calls] == [f"model.layers.{i}" for i in range(4)]
    assert region.function == "forward" and region.where.startswith("modeling_llama.py:")
    assert all(c.user_line.startswith("modeling_llama.py:") for c in region.region_calls)
    assert not any(c.differed for c in region.region_calls)


def test_nested_region_first_layer_traced_apart(nested_first_differs):
    region = _agrees_with_torch(*nested_first_differs)
    assert [c.subgraph for c in region.region_calls] == ["subgraph_0", "subgraph_1", "subgraph_1", "subgraph_1"]
    assert (region.distinct, region.reuse) == (2, 0.5)
    second = region.region_calls[1]
    assert second.module == "model.layers.1" and not second.reused
    # what differed: layer 0's input is the graph's input, layer 1's an intermediate (the same dtype, shape, stride)
    assert second.differed[0].startswith("input 0: intermediate ") and "subgraph_0 had graph input l_embeds_" in \
        second.differed[0]
    assert "requires_grad" in second.differed[1]
    assert "subgraph_0 has one call" in region.note


def test_trace_and_check_state_reuse(nested_first_differs):

    from tcinspect.analysis.check.judge import check_limits
    from tcinspect.analysis.check.limits import Limits
    from tcinspect.render.table import trace

    rep = nested_first_differs[0]
    text = render_text(trace(rep, ["summary", "regions"]), 200)
    assert "regions" in text and "4 calls, 2 distinct, 2 reused (50%)" in text
    assert "traced again for model.layers.1" in text
    fails = check_limits("m", rep, Limits(min_region_reuse=0.75))
    assert [f.status for f in fails if f.check == "region_reuse"] == ["fail"]
    ok = check_limits("m", rep, Limits(min_region_reuse=0.5))
    assert [f.status for f in ok if f.check == "region_reuse"] == ["ok"]


def test_regions_round_trip_and_html(nested_first_differs):
    from tcinspect import serialize
    from tcinspect.render import html

    rep = nested_first_differs[0]
    for fmt in ("yaml", "json"):
        back = serialize.loads(serialize.dumps(rep, fmt))
        assert back.regions == rep.regions and back.regions is not None
    page = html.render(rep)
    assert '<section id="regions">' in page and "subgraph_1" in page


def test_blocks_compiled_once_and_reused(monkeypatch):
    rep, graphs = _blocks(monkeypatch, use_cache=False)
    assert rep.ok, rep.error
    (region,) = rep.regions.regions
    # torch compiled one graph for the layers' shared code and ran it once per layer
    assert len(graphs) == 1 and graphs[0]["runs"] == 4
    assert region.kind == "compiled_block" and region.distinct == len(graphs) == 1
    assert region.calls == -1 and region.reuse is None  # calls served from Dynamo's cache are not on the trace
    assert region.region_calls[0].user_line.startswith("modeling_llama.py:")
    from tcinspect.analysis.regions import verdict

    assert verdict(region).startswith("compiled once")


def test_blocks_recompiled_per_layer(monkeypatch):
    rep, graphs = _blocks(monkeypatch, use_cache=True)
    assert rep.ok, rep.error
    (region,) = rep.regions.regions
    # torch compiled the shared code once per layer: each graph ran once
    assert len(graphs) == 4 and [g["runs"] for g in graphs] == [1, 1, 1, 1]
    assert region.distinct == len(graphs) and region.compile_ids == ("0/0", "0/1", "0/2", "0/3")
    assert [c.compile_id for c in rep.stages.dynamo.recompiles] == list(region.compile_ids[1:])
    for k, call in enumerate(region.region_calls[1:]):
        newest = rep.stages.dynamo.recompiles[k].reasons[0]  # the failed guard of the compile just before
        assert call.differed[0] == newest.strip().splitlines()[0].replace("        ", "  ")
        assert f"layers[{k}].is_initialized == False" in call.differed[0]
    from tcinspect.analysis.check.judge import check_limits
    from tcinspect.analysis.check.limits import Limits

    finding = check_limits("m", rep, Limits(min_region_reuse=0.5))[-1]
    assert finding.status == "fail" and "compiled 4 times" in finding.message


# ----------------------------------------------------------------------------- TORCH_TRACE logs (no torch)

LOGS = MODELS.parent / "data" / "torch_trace" / "torch-2.13.0"


def _without_times(regions: dict) -> dict:
    return {"regions": [{k: v for k, v in r.items() if not k.endswith("_time_s")} for r in regions["regions"]]}


@pytest.mark.parametrize("case", ["nested_first_differs", "blocks_recompiled"])
def test_a_torch_trace_log_gives_the_live_regions(case):
    """The log torch wrote during the capture reads into the live report's regions, and agrees with what the
    counting backend saw in that run (tests/data/torch_trace/record_regions.py)."""
    import json

    from tcinspect import serialize
    from tcinspect.parse import rankpool

    truth = json.loads((LOGS / f"regions_{case}.truth.json").read_text(encoding="utf-8"))
    rep = rankpool.read(LOGS / f"regions_{case}.log.gz")
    assert rep.regions is not None
    got = _without_times(serialize.to_dict(rep)["regions"])
    assert got == _without_times(truth["regions"])
    (region,) = rep.regions.regions
    graphs = truth["graphs"]
    if case == "nested_first_differs":
        (graph,) = graphs
        shared = [(c.node, c.subgraph) for c in region.region_calls if c.subgraph != "subgraph_0"]
        assert shared == [tuple(i[:2]) for i in graph["invokes"]]
        assert (region.calls, region.distinct) == (4, 2)
    else:
        assert region.distinct == len(graphs) == 4 and [g["runs"] for g in graphs] == [1, 1, 1, 1]
        assert region.compile_time_s > region.recompile_time_s > 0


def test_kernels_per_region_from_inductor_s_subgraph_functions():
    """sample_models/nested_regions.py through Inductor (tests/data/regions-nested-inductor-torch2.13.0-cpu.yaml.gz,
    saved by `tcinspect trace ... -f yaml`): Inductor compiles subgraph_1 once as its own function,
    partitioned_fw_subgraph_1_0 (addmm + one C++ kernel) and partitioned_bw_subgraph_1_0 (three), and the
    forward wrapper calls it three times; subgraph_0, called once, was inlined and its kernels sit in call() with
    blocks.0 as their provenance."""
    import gzip
    import re

    from tcinspect import serialize
    from tcinspect.parse import regions

    path = MODELS.parent / "data" / "regions-nested-inductor-torch2.13.0-cpu.yaml.gz"
    rep = serialize.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    fw, bw = rep.stages.inductor.outputs
    assert regions.subgraph_kernels(fw.wrapper) == {"subgraph_1": 2}
    assert regions.subgraph_kernels(bw.wrapper) == {"subgraph_1": 3}
    assert len(re.findall(r"= partitioned_fw_subgraph_1_0\(", fw.wrapper)) == 3  # one run per reusing call
    inlined = [k for o in (fw, bw) for k in o.kernels if all(m.startswith("blocks.0") for m in k.modules)]
    assert len(inlined) == sum(len(o.kernels) for o in (fw, bw)) == 5
    (region,) = regions.build([], rep.stages, rep.compiles).regions
    assert region.kernels == 2 + 3 + 5 == rep.regions.regions[0].kernels
