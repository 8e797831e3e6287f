"""Collectives per rank and graph, and where two ranks' collectives differ: read from real torchrun jobs' TORCH_TRACE
logs and checked against torch's own record of the same run (tests/data/torch_trace/record_collectives.py): a 2-rank
gloo job of functional collectives (torch 2.13, then named sample_models/collectives_gloo.py) against the graphs
torch handed the backend, and every ``*-nproc<N>`` job (tensor parallel, FSDP2, DDP, functional collectives; gloo
on CPUs, NCCL on 2 and 4 GPUs) against the graphs Inductor compiled, read by a post-grad pass. Torch-free."""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from conformance import not_in_counter
from helpers import cli, render_text
from tcinspect.analysis import divergence as rank_views
from tcinspect.analysis.check.ranks import divergence_findings
from tcinspect.derived import collectives, divergence
from tcinspect.parse import rankpool
from tcinspect.report import Graph, Node

JOB = Path(__file__).parent / "data" / "torch_trace" / "torch-2.13.0" / "collectives_gloo"
DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64", "int64": "i64", "int32": "i32"}
#: Every job recorded with torch's post-grad collectives beside its logs (record_collectives.py's own form).
RECORDED = sorted(p.parent for p in (JOB.parents[1]).glob("torch-*/*-nproc*/truth.json"))


@pytest.fixture(scope="module")
def job():
    return rankpool.read(JOB), json.loads((JOB / "truth.json").read_text())


def test_forward_collectives_equal_the_graphs_torch_handed_the_backend(job):
    rep, truth = job
    assert sorted(str(r.rank) for r in rep.ranks) == sorted(truth["backend_collectives"])  # every rank compared
    for r in rep.ranks:
        ours = [(c.kind, c.group, c.dtype, [int(s) for s in c.shape])
                for c in collectives.of_stages(r.stages) if c.part == "forward"]
        theirs = [(t["op"], t["group"], DTYPES[t["dtype"]], t["shape"]) for t in truth["backend_collectives"][str(r.rank)]]
        assert ours == theirs and ours


def test_each_graph_follows_the_schedule_inductor_logged(job):
    rep, _ = job
    for r in rep.ranks:
        for o in r.stages.inductor.outputs:
            cols = [c for c in collectives.of_stages(r.stages) if c.part == o.part]
            scheduled = [collectives.kind_of(op) for op in o.collective_schedule if collectives.kind_of(op)]
            assert scheduled == [c.kind for c in cols] and cols  # every graph here has collectives
    assert rep.ranks[1].stages.inductor.outputs[0].collective_schedule[:2] == (
        "torch.ops._c10d_functional.all_reduce_.default", "torch.ops._c10d_functional.wait_tensor.default")


def test_divergence_names_the_first_differing_collective(job):
    rep, _ = job
    d = next(d for d in divergence.divergences(rep.ranks) if d.aspect == "collectives")
    assert d.compile_id == "0/0"
    values = {g.ranks: g.value for g in d.groups}
    assert values[(0,)] == "collective 3 of 4: backward reduce_scatter_tensor f32[4, 16] group 0 (node reduce_scatter_tensor)"
    assert values[(1,)] == "collective 3 of 6: forward all_reduce f32[8, 16] group 2 (node all_reduce_1)"
    found = divergence_findings("collectives_gloo.py", rep)
    assert any(f.status == "fail" and "collectives" in f.message for f in found)


def test_ranks_that_agree_do_not_diverge_on_collectives(job):
    rep, _ = job
    same = replace(rep, ranks=(rep.ranks[0], replace(rep.ranks[0], rank=1)))
    assert not [d for d in divergence.divergences(same.ranks) if d.aspect == "collectives"]


def test_a_scheduled_order_other_than_the_graphs_is_followed():
    nodes = (Node("call_function", "a", "torch.ops._c10d_functional.all_reduce.default", "(x, 'sum', '0')", "f32", ("4",)),
             Node("call_function", "w", "torch.ops._c10d_functional.wait_tensor.default", "(a,)", "f32", ("4",)),
             Node("call_function", "b", "torch.ops._c10d_functional.all_gather_into_tensor.default", "(x, 2, '1')",
                  "f32", ("8",)))
    graph = Graph("inductor_post_grad_graph", "", nodes)
    plain = collectives._of_graph("0/0", "forward", graph)
    assert [(c.kind, c.group, c.index) for c in plain] == [("all_reduce", "0", 1), ("all_gather_into_tensor", "1", 2)]
    ordered = collectives._of_graph("0/0", "forward", graph, ("torch.ops._c10d_functional.all_gather_into_tensor.default",
                                                              "torch.ops._c10d_functional.all_reduce_.default"))
    assert [c.kind for c in ordered] == ["all_gather_into_tensor", "all_reduce"]


def test_slow_compile_on_one_rank_is_called_out(job):
    rep, _ = job
    assert rank_views.compile_spread(rep) == ""  # 7.6 s and 7.8 s: alike
    r1 = rep.ranks[1]
    slow = replace(r1, compiles=tuple(replace(c, entire_frame_compile_time_s=c.entire_frame_compile_time_s + 30)
                                      for c in r1.compiles))
    text = rank_views.compile_spread(replace(rep, ranks=(rep.ranks[0], slow)))
    assert text.startswith("rank 1 compiled for ") and "they wait for it at their first collective" in text


def test_trace_shows_collectives_and_the_divergence(capsys):
    code, out, err = cli(capsys, "trace", str(JOB), "--stage", "summary,collectives")
    assert code == 0, err
    assert "collectives" in out and "collective 3 of 6: forward all_reduce f32[8, 16] group 2" in out
    assert "Collectives · 4 in the compiled graphs" in out  # rank 0's stages
    code, out, _ = cli(capsys, "check", str(JOB), "--max-graph-breaks", "0")
    assert code == 1 and "collectives" in out


#: each recorded job read once for every test of it
_read = functools.cache(rankpool.read)


@pytest.fixture(scope="module", params=RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def recorded(request):
    return _read(request.param), json.loads((request.param / "truth.json").read_text())


def _ours(c: collectives.Collective) -> tuple:
    """A collective as record_collectives.py writes torch's: op, group, dtype, shape."""
    return c.kind, c.group, c.dtype, tuple(int(s) for s in c.shape)


def _theirs(collectives: list[dict]) -> list[tuple]:
    return [(t["op"], t["group"], DTYPES[t["dtype"]], tuple(t["shape"])) for t in collectives]


def _by_graph(truth_rank: dict) -> dict[tuple[str, str], list[tuple]]:
    out: dict[tuple[str, str], list[tuple]] = {}
    for g in truth_rank["post_grad"]:
        out.setdefault((g["compile_id"], g["part"]), []).extend(_theirs(g["collectives"]))
    return out


def test_the_recorded_jobs_are_there():
    jobs = {(p.parent.name, p.name) for p in RECORDED}
    assert {("torch-2.13.0", f"{s}-nproc2") for s in ("tp_mlp", "collectives_ranks", "fsdp2_mlp", "ddp_mlp")} <= jobs
    assert {(gpu, f"{s}-nproc{n}") for gpu in ("torch-2.11.0-cuda",) for n in (2, 4)
            for s in ("tp_mlp", "collectives_ranks", "fsdp2_mlp", "ddp_mlp")} <= jobs


def test_each_ranks_collectives_equal_the_graphs_inductor_compiled(recorded):
    rep, truth = recorded
    assert sorted(str(r.rank) for r in rep.ranks) == sorted(truth["ranks"]) and len(rep.ranks) == truth["nproc"]
    for r in rep.ranks:
        ours: dict[tuple[str, str], list[tuple]] = {}
        for c in collectives.of_stages(r.stages):
            ours.setdefault((c.compile_id, c.part), []).append(_ours(c))
        theirs = {k: v for k, v in _by_graph(truth["ranks"][str(r.rank)]).items() if v}
        assert ours == theirs, f"rank {r.rank}"


def test_the_graphs_dynamo_handed_the_backend_hold_the_same_collectives(recorded):
    rep, truth = recorded
    for r in rep.ranks:
        for cid, theirs in truth["ranks"][str(r.rank)]["dynamo"].items():
            ours = [c for c in collectives.of_stages(r.stages, cid) if c.part == "forward"]
            if theirs:  # functional collectives called by the model: Dynamo's graph has them as Inductor compiled them
                assert [_ours(c) for c in ours] == _theirs(theirs)


def test_graphs_and_breaks_equal_dynamos_counters(recorded):
    """Graphs against ``unique_graphs``; the breaks torch's counter counts against it (FSDP2's frame that Dynamo
    skipped at a break it could not resume from is a break event, which ``counters["graph_break"]`` leaves out)."""
    rep, truth = recorded
    for r in rep.ranks:
        t = truth["ranks"][str(r.rank)]
        counted = [b for b in r.stages.dynamo.graph_breaks if not not_in_counter(b)]
        assert (r.summary.graphs, len(counted)) == (t["graphs"], t["graph_breaks"])


def test_ranks_diverge_on_collectives_exactly_where_torch_compiled_different_ones(recorded):
    rep, truth = recorded
    differ = len({repr(sorted(_by_graph(t).items())) for t in truth["ranks"].values()}) > 1
    found = [d for d in divergence.divergences(rep.ranks) if d.aspect == "collectives"]
    assert bool(found) == differ
    assert bool([f for f in divergence_findings("job", rep) if f.status == "fail"]) == bool(rep.divergence)


@pytest.mark.parametrize("job", [p for p in RECORDED if p.name.startswith(("tp_mlp", "fsdp2_mlp", "ddp_mlp"))],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ranks_that_compiled_alike_do_not_diverge(job):
    """A DTensor's graph inputs name the rank's own GPU (``DTensor(f32[256, 64][64, 1]cuda:1, S(0))``) and its guards
    Python object ids (``__dtensor_spec_139896369303040``): ranks that compiled alike differ only there."""
    rep = _read(job)
    assert rep.divergence == ()
    assert not [f for f in divergence_findings("job", rep) if f.status == "fail"]


def test_every_view_shows_the_collectives_with_their_size():
    from tcinspect.render import collectives as view
    from tcinspect.render import html

    rep = _read(JOB.parents[1] / "torch-2.11.0-cuda" / "tp_mlp-nproc2")  # NCCL, two H200s
    cols = collectives.of_stages(rep.stages)
    assert [c.nbytes for c in cols] == [16 * 64 * 4, 8 * 64 * 4] * 4  # f32[16, 64] all-gathered, f32[8, 64] scattered
    text = render_text(view.collectives(rep), 160)
    assert "Collectives · 8 in the compiled graphs" in text and "4.0 KiB" in text and "2.0 KiB" in text
    page = html.render(rep)
    assert '<section id="collectives"><h2>Collectives · 8</h2>' in page and "reduce_scatter_tensor_3" in page
    assert '<section id="collectives">' not in html.render(rankpool.read(JOB.parents[1] / "torch-2.13.0" / "tiny.log.gz"))
