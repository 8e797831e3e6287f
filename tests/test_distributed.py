"""Distributed runs (--nproc): merging ranks, divergence, DDP splits, and real torchrun jobs on CPU (gloo).

The first half needs no torch: hand-built per-rank reports and fabricated rank files. The torchrun
jobs (marked `distributed`) are three in all, each shared by a module-scoped fixture.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from builders.reports import make_report
from helpers import MODELS, SAMPLES, cli, render_text, run_cli
from tcinspect import serialize
from tcinspect.analysis import divergence
from tcinspect.analysis.check.ranks import divergence_findings
from tcinspect.capturing import launcher
from tcinspect.derived.divergence import divergences
from tcinspect.errors import DeviceError, ExitCode, UsageError, exit_code_for
from tcinspect.parse import ddp
from tcinspect.parse import ranks as ranks_mod
from tcinspect.parse.events import Event, to_json_line
from tcinspect.parse.merge import merge
from tcinspect.render import ranks as render
from tcinspect.report import (
    CompileMetrics,
    DynamoGraph,
    DynamoStage,
    Graph,
    GraphBreak,
    Guard,
    Node,
    Options,
    RankReport,
    Report,
    Request,
    SourceLocation,
    Stages,
)
from tcinspect.vocabulary import ranks_text

# ----------------------------------------------------------------------------- hand-built ranks


def _graph(*targets: str) -> Graph:
    nodes = [Node("placeholder", "l_x_", "L_x_", dtype="f32", shape=("8", "16"))]
    nodes += [Node("call_function", f"n{i}", t, "l_x_", dtype="f32", shape=("8", "16")) for i, t in enumerate(targets)]
    nodes.append(Node("output", "output", "output", f"n{len(targets) - 1}"))
    return Graph("dynamo_output_graph", "class GraphModule(torch.nn.Module):\n    pass\n", tuple(nodes))


def _rank(rank: int, *, branch: bool = False, status: str = "ok", error: str = "", where: str = "") -> RankReport:
    """Rank `rank` of a model whose forward prints on rank 1 (`branch`): a break at 0/0 and a resume graph 1/0."""
    guards = (Guard("value", "EQUALS_MATCH", "L['self'].rank", f"L['self'].rank == {rank}"),
              Guard("identity", "ID_MATCH", "L['self']", f"___check_obj_id(L['self'], {140234000000 + rank * 4096})"))
    graphs = [DynamoGraph("0/0", "forward", "/p/m.py", 10, _graph("torch.relu") if branch else _graph("torch.relu", "torch.sin"), guards)]
    breaks: tuple[GraphBreak, ...] = ()
    compiles = [CompileMetrics("0/0", "forward")]
    if branch:
        breaks = (GraphBreak("0/0", SourceLocation("/p/m.py", 14, "forward", "print(h)"), "Failed to trace builtin operator"),)
        graphs.append(DynamoGraph("1/0", "torch_dynamo_resume_in_forward_at_14", "/p/m.py", 14, _graph("torch.sin")))
        compiles.append(CompileMetrics("1/0", "torch_dynamo_resume_in_forward_at_14"))
    stages = Stages(dynamo=DynamoStage("ok", "", tuple(graphs), breaks))
    return RankReport(rank=rank, status=status, error=error, where=where, device="cpu", stages=stages,
                      compiles=tuple(compiles), calls=1)


def _merged(*ranks: RankReport) -> Report:
    base = make_report(torch_version="2.13.0+cpu",
                       stages=ranks[0].stages, compiles=ranks[0].compiles, tcinspect_version="0.1.0")
    return merge(base, ranks, timings=(("torchrun_s", 9.5),))


def test_identical_ranks_do_not_diverge_though_object_ids_differ():
    ranks = [_rank(0), _rank(1)]
    # the value guard on self.rank differs by design: make the two ranks' models the same but for the object id
    same = [r if r.rank == 0 else replace(r, stages=_rank(0).stages) for r in ranks]
    assert divergences(same) == ()
    assert "Divergence: none — all 2 ranks" in render_text(render.divergence(_merged(*same)))


def test_first_divergence_names_the_compile_and_how():
    divs = divergences([_rank(0), _rank(1, branch=True)])
    assert divergence.first_compile(divs) == "0/0"
    by_aspect = {(d.compile_id, d.aspect): d for d in divs}
    assert set(by_aspect) == {("0/0", "graph"), ("0/0", "graph_breaks"), ("0/0", "guards"), ("1/0", "compile"),
                              ("", "compile_ids")}
    brk = by_aspect["0/0", "graph_breaks"]
    assert [(g.ranks, g.value) for g in brk.groups] == [((0,), "no graph break"),
                                                          ((1,), "Failed to trace builtin operator at m.py:14")]
    guards = by_aspect["0/0", "guards"].groups
    # the object ids differ too, but only the rank's own value guard is named
    assert guards[0].value == "2 guards; only here: L['self'].rank == 0"
    assert guards[1].value == "2 guards; only here: L['self'].rank == 1"
    assert [g.value for g in by_aspect["1/0", "compile"].groups] == [
        "not compiled", "compiled torch_dynamo_resume_in_forward_at_14"]
    line = divergence.describe(brk)
    assert line.startswith("ranks diverge at compile 0/0 (graph_breaks): rank 0: no graph break; rank 1: ")


def test_each_rank_on_its_own_gpu_is_not_a_divergence():
    # seen on 2 GPUs with FSDP2: TENSOR_MATCH names the rank's own device index
    def on_gpu(rank: int) -> RankReport:
        r = replace(_rank(0), rank=rank)
        guard = Guard("tensor", "TENSOR_MATCH", "L['x']", "check_tensor(L['x'], Tensor, DispatchKeySet(CUDA), "
                      f"torch.float32, device={rank}, requires_grad=False, size=[32, 256], stride=[256, 1])")
        (g,) = r.stages.dynamo.graphs
        return replace(r, stages=Stages(dynamo=DynamoStage("ok", "", (replace(g, guards=(guard,)),))))

    assert divergences([on_gpu(0), on_gpu(1)]) == ()


def test_groups_of_ranks_and_rank_ranges():
    divs = divergences([_rank(0), _rank(1, branch=True), _rank(2), _rank(3, branch=True)])
    brk = next(d for d in divs if d.aspect == "graph_breaks")
    assert [g.ranks for g in brk.groups] == [(0, 2), (1, 3)]
    assert ranks_text((0, 2, 3, 4, 7)) == "ranks 0, 2-4, 7" and ranks_text((1,)) == "rank 1"


def test_a_rank_that_crashed_is_compared_on_what_it_reached():
    crashed = _rank(1, branch=True, status="crashed", error="Segmentation fault", where="m.py:14")
    crashed = replace(crashed, stages=Stages(dynamo=DynamoStage(
        "failed", "", crashed.stages.dynamo.graphs[:1], crashed.stages.dynamo.graph_breaks)),
                      compiles=crashed.compiles[:1])
    divs = divergences([_rank(0, branch=True), crashed])
    assert divs[0].aspect == "status" and divs[0].compile_id == ""
    assert [g.value for g in divs[0].groups] == ["ok", "crashed: Segmentation fault (in m.py:14)"]
    # 1/0, which the crashed rank never reached, is not a divergence; its own guards are
    assert {d.compile_id for d in divs[1:]} == {"0/0"}


def test_round_trip_with_ranks_and_the_derived_divergence(tmp_path):
    rep = _merged(_rank(0), _rank(1, branch=True))
    for fmt in ("yaml", "json"):
        text = serialize.dumps(rep, fmt)
        again = serialize.loads(text)
        assert again == rep and again.ranks == rep.ranks and again.timings == rep.timings
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
        assert list(data)[-3:] == ["ranks", "divergence", "timings"]
        assert list(data["ranks"][1])[:8] == ["rank", "status", "error", "where", "device", "calls", "input_errors",
                                              "summary"]
        assert data["ranks"][1]["summary"]["graph_breaks"] == 1
        assert data["divergence"][0] == {"compile_id": "0/0", "aspect": "graph", "groups": [
            {"ranks": [0], "value": data["divergence"][0]["groups"][0]["value"]},
            {"ranks": [1], "value": data["divergence"][0]["groups"][1]["value"]}]}
    quiet = yaml.safe_load(serialize.dumps(rep, "yaml", timings=False))
    assert "compile_time_s" not in quiet["ranks"][0]["summary"]
    assert all(not k.endswith("_time_s") for c in quiet["ranks"][0]["compiles"] for k in c)
    # a report of one process has no ranks key at all: its YAML is what it was
    assert "ranks" not in serialize.to_dict(rep.replace(ranks=()))


def test_check_applies_thresholds_per_rank_and_fails_on_divergence(capsys, tmp_path):
    saved = tmp_path / "two-ranks.yaml"
    saved.write_text(serialize.dumps(_merged(_rank(0), _rank(1, branch=True)), "yaml"))
    code, out, _ = cli(capsys, "check", str(saved), "--max-graph-breaks", "0", "--format", "json")
    findings = json.loads(out)["findings"]
    assert code == int(ExitCode.CHECK_FAILED)
    assert [(f["check"], f["status"], f["message"]) for f in findings if f["check"] == "graph_breaks"] == [
        ("graph_breaks", "ok", "rank 0: graph_breaks 0 <= max 0"),
        ("graph_breaks", "fail", "rank 1: graph_breaks 1 > max 0")]
    # one failure for the first compile where ranks differ, at the line of the break only rank 1 took
    (divergent,) = [f for f in findings if f["check"] == "rank divergence"]
    assert divergent["status"] == "fail" and (divergent["file"], divergent["line"]) == ("/p/m.py", 14)
    # what the job feels first (a compile only rank 1 made), then the first compile where the ranks differ
    assert divergent["message"] == ("ranks diverge: rank 0 did not compile 1/0 (torch_dynamo_resume_in_forward_at_14), "
                                    "which rank 1 compiled; first at compile 0/0 (graph, graph_breaks, guards): rank 0: "
                                    "no graph break; rank 1: Failed to trace builtin operator at m.py:14; later "
                                    "compiles differ too: 1/0")
    same = _merged(_rank(0), replace(_rank(1), stages=_rank(0).stages))
    saved.write_text(serialize.dumps(same, "yaml"))
    code, out, _ = cli(capsys, "check", str(saved), "--max-graph-breaks", "0", "--format", "json")
    assert code == 0 and {"model": str(saved), "check": "rank divergence", "status": "ok",
                          "message": "all 2 ranks compiled the same", "file": "", "line": 0} in json.loads(out)["findings"]


def test_ranks_table_marks_the_odd_rank_and_per_rank_views_group_equal_ranks():
    rep = _merged(_rank(0), _rank(1, branch=True), _rank(2))
    text = render_text(render.ranks_table(rep))
    assert "Ranks · 3 (torchrun)" in text and text.count(" ok ") == 3
    view = render_text(render.per_rank(rep, lambda r: f"{r.summary.graph_breaks} breaks", divergence.breaks_key))
    assert "── ranks 0, 2 (the same on each) ──" in view and "── rank 1 ──" in view
    assert view.index("ranks differ first at compile 0/0") < view.index("── ranks 0, 2")


# ----------------------------------------------------------------------------- DDP splits from events


_SPLIT = '''class GraphModule(torch.nn.Module):
    def forward(self, L_self_modules_fc1_parameters_weight_: "f32[64, 32]", L_x_: "f32[8, 32]", L_self_modules_fc2_parameters_weight_: "f32[4, 64]"):
        l_self_modules_fc1_parameters_weight_ = L_self_modules_fc1_parameters_weight_
        l_x_ = L_x_
        l_self_modules_fc2_parameters_weight_ = L_self_modules_fc2_parameters_weight_

        # No stacktrace found for following nodes
        submod_0 = self.submod_0(l_x_, l_self_modules_fc1_parameters_weight_);  l_x_ = l_self_modules_fc1_parameters_weight_ = None
        submod_1 = self.submod_1(submod_0, l_self_modules_fc2_parameters_weight_);  submod_0 = l_self_modules_fc2_parameters_weight_ = None
        return (submod_1,)

    class submod_0(torch.nn.Module):
        def forward(self, l_x_: "f32[8, 32]", l_self_modules_fc1_parameters_weight_: "f32[64, 32]"):
            linear: "f32[8, 64]" = torch._C._nn.linear(l_x_, l_self_modules_fc1_parameters_weight_);  l_x_ = None
            return linear
'''
_CHILD = {
    "submod_0": '''class GraphModule(torch.nn.Module):
    def forward(self, l_x_: "f32[8, 32]", l_self_modules_fc1_parameters_weight_: "f32[64, 32]"):
         # File: /p/m.py:12 in forward, code: h = self.fc1(x)
        linear: "f32[8, 64]" = torch._C._nn.linear(l_x_, l_self_modules_fc1_parameters_weight_);  l_x_ = l_self_modules_fc1_parameters_weight_ = None
        return linear
''',
    "submod_1": '''class GraphModule(torch.nn.Module):
    def forward(self, input_2: "f32[8, 64]", l_self_modules_fc2_parameters_weight_: "f32[4, 64]"):
         # File: /p/m.py:13 in forward, code: return self.fc2(h.relu())
        relu: "f32[8, 64]" = torch.relu(input_2);  input_2 = None
        linear: "f32[8, 4]" = torch._C._nn.linear(relu, l_self_modules_fc2_parameters_weight_);  relu = l_self_modules_fc2_parameters_weight_ = None
        return linear
''',
}


def _split_events() -> list[Event]:
    evs = [Event(ddp.SPLIT_GRAPH, 4, 0, payload=_SPLIT)]
    evs += [Event(ddp.SPLIT_CHILD, 4, 0, meta={"name": name}, payload=text) for name, text in _CHILD.items()]
    return evs


def test_ddp_splits_from_the_structured_trace():
    (split,) = ddp.splits(_split_events())
    assert split.compile_id == "4/0"
    assert [n.target for n in split.graph.nodes if n.op == "call_module"] == ["submod_0", "submod_1"]
    first, second = split.children
    assert (first.name, first.bucket, first.parameters, first.parameter_bytes) == ("submod_0", 1, ("fc1.weight",), 64 * 32 * 4)
    assert (second.name, second.bucket, second.parameters, second.parameter_bytes) == ("submod_1", 0, ("fc2.weight",), 4 * 64 * 4)
    assert second.graph.op_count == 2 and second.graph.nodes[0].shape == ("8", "64")
    assert ddp.parameter_name("l_self_modules_layers_modules_0_modules_0_parameters_weight_") == "layers.0.0.weight"
    text = render_text(render.ddp_split(split))
    assert "submod_1" in text and "fc2.weight" in text and "1.0 KiB" in text and "m.py:13" in text


def test_rank_files_read_back_crashed_stopped_missing_and_error(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def model(x):\n    return x\n")
    files = [launcher.RankFiles(tmp_path, r) for r in range(4)]
    for f in files[:3]:
        f.pid.write_text("123")
        f.events.write_text("".join(to_json_line(e) for e in _split_events()) + '{"meta": {"dynamo_st')  # cut mid-line
    files[0].fault.write_text(f'Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n'
                              f'  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at\n'
                              f'  File "{path}", line 2 in model\n')
    files[1].stopped.write_text(f'Current thread 0x1 (most recent call first):\n  File "{path}", line 1 in model\n')
    files[2].result.write_text(json.dumps({"error": {"class": "ModelRaisedError", "cause": "m.py:2: the model raised "
                                                     "ValueError: boom", "fix": "fix the model"}}))
    ranks, reports = launcher.collect(tmp_path, 4, path, "model", Options(backend="eager"),
                                         timed_out=False)
    assert reports == {}
    assert [(r.status, r.error, r.where) for r in ranks] == [
        ("crashed", "Segmentation fault", "m.py:2"),
        ("stopped", "torchrun ended it when another rank failed", "m.py:1"),
        ("error", "m.py:2: the model raised ValueError: boom — fix the model", ""),
        ("missing", "torchrun started no process for it", "")]
    assert [len(r.ddp_splits) for r in ranks] == [1, 1, 1, 0]  # what each rank streamed before it ended
    rep = _merged(*ranks)
    failure = ranks_mod.rank_failure(rep)
    assert failure is not None and failure.kind == "crashed" and exit_code_for(failure.kind) == ExitCode.CAPTURE_CRASHED
    assert failure.cause.startswith("rank 0 of 4 crashed: Segmentation fault (in m.py:2); rank 1 stopped")
    ranks, _ = launcher.collect(tmp_path, 2, path, "model", Options(), timed_out=True)
    assert ranks[1].status == "timed_out" and ranks[1].where == "m.py:1"


def test_a_rank_error_is_exit_2_and_a_failed_stage_exit_3():
    err = _merged(_rank(0, status="stopped", error="torchrun ended it when another rank failed"),
                  _rank(1, status="error", error="m.py:2: the model raised ValueError: boom — fix the model"))
    failure = ranks_mod.rank_failure(err)
    assert failure is not None and exit_code_for(failure.kind) == ExitCode.USAGE_ERROR
    assert (failure.cause, failure.fix) == ("rank 1 of 2: m.py:2: the model raised ValueError: boom; rank 0 stopped",
                                            "fix the model")
    failed = _merged(_rank(0), _rank(1, status="failed", error="inductor stage failed: boom"))
    failure = ranks_mod.rank_failure(failed)
    assert failure is not None and exit_code_for(failure.kind) == ExitCode.STAGE_FAILED
    assert ranks_mod.rank_failure(_merged(_rank(0), _rank(1))) is None


# ----------------------------------------------------------------------------- launching, without launching


def test_torchrun_command_and_its_options():
    cmd = launcher.torchrun_command(2, [])
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert cmd[3:] == ["--standalone", "--nproc-per-node=2", "-m", "tcinspect.capturing.rank"]
    args = launcher.torchrun_args(["--master-port=29511", "--max-restarts 0"])
    assert args == ["--master-port=29511", "--max-restarts", "0"]
    assert "--standalone" not in launcher.torchrun_command(2, args)  # the user picked the rendezvous
    for bad, needle in [("--nproc-per-node=4", "set by tcinspect"), ("-m", "set by tcinspect"),
                        ("--nnodes=2", "several nodes"), ("train.py", "not a torchrun option")]:
        with pytest.raises(UsageError, match=needle):
            launcher.torchrun_args([bad])
    assert launcher.torchrun_args(["--nnodes=1"]) == ["--nnodes=1"]


def test_rank_counts_this_machine_cannot_run():
    with pytest.raises(UsageError, match="at least one rank"):
        launcher.check_nproc(0, "")
    with pytest.raises(UsageError, match="more CPU ranks than this"):
        launcher.check_nproc((os.cpu_count() or 1) * 4 + 1, "cpu")
    launcher.check_nproc((os.cpu_count() or 1) * 4, "cpu")
    with pytest.raises(DeviceError, match="asks for 4 ranks of a CUDA model file, but this machine has 2 CUDA GPUs"):
        launcher.check_nproc(4, "cuda", cuda_count=lambda: 2)
    launcher.check_nproc(2, "cuda", cuda_count=lambda: 2)


def test_usage_errors_are_one_line_before_anything_starts(capsys, tmp_path):
    code, _, err = cli(capsys, "trace", str(SAMPLES / "ddp_mlp.py"), "--nproc", "0")
    assert code == 2 and err.strip() == ("tcinspect: error: --nproc 0: a job needs at least one rank — "
                                         "pass --nproc 1 or more")
    code, _, err = cli(capsys, "breaks", str(SAMPLES / "tiny.py"), "--torchrun-arg=--master-port=1")
    assert code == 2 and "only --nproc starts" in err
    saved = tmp_path / "r.yaml"
    saved.write_text(serialize.dumps(_merged(_rank(0), _rank(1)), "yaml"))
    code, _, err = cli(capsys, "guards", str(saved), "--nproc", "2")
    assert code == 2 and "needs a .py file" in err
    code, _, err = cli(capsys, "trace", str(SAMPLES / "ddp_mlp.py"), "--nproc", "2", "--torchrun-arg=--nnodes=2")
    assert code == 2 and "several nodes" in err


def test_too_many_ranks_for_the_gpus_says_so(capsys):
    import torch

    gpus = torch.cuda.device_count()
    # a file that sets device = "cuda" (the distributed samples pick CUDA only where there is one)
    needs_cuda = Path(__file__).parent / "models" / "needs_cuda.py"
    code, _, err = cli(capsys, "trace", str(needs_cuda), "--nproc", str(gpus + 1))
    assert code == 2 and f"but this machine has {gpus} CUDA GPU" in err


def test_timeout_stops_the_whole_job(monkeypatch, capsys):
    # a stand-in for torchrun whose one rank registers and then hangs
    hang = ("import os, time; d = os.environ['TCINSPECT_RANKS_DIR']; "
            "open(os.path.join(d, 'rank-0.pid'), 'w').write(str(os.getpid())); time.sleep(120)")
    monkeypatch.setattr(launcher, "torchrun_command", lambda nproc, args: [sys.executable, "-c", hang])
    monkeypatch.setattr(launcher, "STOP_GRACE_S", 5.0)
    rep = launcher.capture(Request(file=str(SAMPLES / "tiny.py"), nproc=1, timeout=1))
    assert rep.failure is not None and exit_code_for(rep.failure.kind) == ExitCode.CAPTURE_CRASHED
    assert rep.failure.cause == "the torchrun job ran past --timeout 1 s and was stopped (rank 0)"
    assert [r.status for r in rep.ranks] == ["timed_out"]


# ----------------------------------------------------------------------------- real torchrun jobs (gloo, CPU)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    """sample_models/ddp_mlp.py on 2 ranks (aot_eager): the report, and the CLI's output."""
    d = tmp_path_factory.mktemp("ddp")
    out = d / "ddp.json"
    proc = run_cli("trace", "sample_models/ddp_mlp.py", "--nproc", "2", "--backend", "aot_eager", "--stage", "summary",
                   "-o", str(out), env={"TCINSPECT_CACHE_DIR": str(d / "cache"), "COLUMNS": "160"})
    return proc, (serialize.load(out) if out.exists() else None)


@pytest.mark.distributed
def test_ddp_sample_every_rank_no_divergence(ddp_run):
    proc, rep = ddp_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [(r.rank, r.status) for r in rep.ranks] == [(0, "ok"), (1, "ok")]
    assert divergences(rep.ranks) == ()
    assert "Divergence: none — all 2 ranks" in proc.stdout
    # the top level is rank 0's report; each rank compiled the MLP's forward into one Dynamo graph
    assert rep.stages == rep.ranks[0].stages and all(r.summary.graphs >= 1 for r in rep.ranks)
    assert rep.target.path == "sample_models/ddp_mlp.py" and ("torchrun_s" in dict(rep.timings))


@pytest.mark.distributed
def test_ddp_sample_shows_the_split_at_bucket_boundaries(ddp_run):
    proc, rep = ddp_run
    (split,) = rep.ranks[0].ddp_splits
    assert split == rep.ranks[1].ddp_splits[0]
    # oracle: bucket_cap_mb=1 and 1 MiB of f32 weights per 512x512 layer: one bucket per layer; the head
    # (20 KiB) joins the last; every parameter is in exactly one bucket, buckets numbered as DDP all-reduces them
    expected = [[f"layers.{i}.0.weight", f"layers.{i}.0.bias"] for i in range(4)]
    expected[3] += ["head.weight", "head.bias"]
    assert [list(c.parameters) for c in split.children] == expected
    assert [c.bucket for c in split.children] == [3, 2, 1, 0]
    assert sum(c.parameter_bytes for c in split.children) == 4 * (4 * (512 * 512 + 512)) + 4 * (10 * 512 + 10)
    assert [n.target for n in split.graph.nodes if n.op == "call_module"] == [c.name for c in split.children]
    graph = next(g for g in rep.stages.dynamo.graphs if g.compile_id == split.compile_id)
    assert sum(c.graph.op_count for c in split.children) == graph.graph.op_count  # the split loses no op
    assert "optimize_ddp_split_graph" in proc.stdout and "DDP all-reduces bucket 0 (submod_3) first" in proc.stdout
    # every child went through AOTAutograd under the frame's compile id: one forward/backward pair each,
    # each backward paired with its own forward (its inputs are what that forward saved)
    aot = [g for g in rep.stages.aot_autograd.graphs if g.compile_id == split.compile_id]
    assert len(aot) == len(split.children)
    for g in aot:
        assert g.forward is not None and g.backward is not None
        saved = {n.name for n in g.backward.nodes if n.op == "placeholder" and not n.name.startswith("tangents")}
        assert saved <= {n.name for n in g.forward.nodes}


@pytest.fixture(scope="module")
def branch_run(tmp_path_factory):
    """sample_models/ddp_rank_branch.py on 2 ranks through `check`, with the report cache kept for later commands."""
    d = tmp_path_factory.mktemp("branch")
    env = {"TCINSPECT_CACHE_DIR": str(d / "cache"), "COLUMNS": "160"}
    proc = run_cli("check", "sample_models/ddp_rank_branch.py", "--nproc", "2", "--backend", "aot_eager",
                   "--max-graph-breaks", "0", "--format", "json", env=env)
    return proc, env, d


@pytest.mark.distributed
def test_check_fails_on_the_planted_divergence_with_thresholds_per_rank(branch_run):
    proc, _, _ = branch_run
    assert proc.returncode == int(ExitCode.CHECK_FAILED), proc.stderr[-3000:]
    findings = json.loads(proc.stdout)["findings"]
    counts = {f["message"].split(":")[0]: int(f["message"].split()[3])
              for f in findings if f["check"] == "graph_breaks"}
    assert set(counts) == {"rank 0", "rank 1"}
    assert counts["rank 1"] == counts["rank 0"] + 2  # the .item() and the print, on rank 1 only
    (divergent,) = [f for f in findings if f["check"] == "rank divergence"]
    line = _line_of(SAMPLES / "ddp_rank_branch.py", "print(f\"rank")
    assert divergent["status"] == "fail" and divergent["line"] == line, divergent
    assert "(graph, graph_breaks, guards): rank 0: no graph break; rank 1: " in divergent["message"]
    assert f"ddp_rank_branch.py:{line}" in divergent["message"]
    assert "[rank 1] rank 1: mean activation" in proc.stderr  # the ranks' own output, labelled


@pytest.mark.distributed
def test_trace_breaks_and_guards_reuse_the_distributed_report(branch_run):
    _, env, d = branch_run
    out = d / "branch.yaml"
    proc = run_cli("trace", "sample_models/ddp_rank_branch.py", "--nproc", "2", "--backend", "aot_eager", "-o", str(out),
                   "--stage", "summary", env=env)
    assert proc.returncode == 0 and "reusing the current report" in proc.stderr, proc.stderr[-2000:]
    rep = serialize.load(out)
    divs = divergences(rep.ranks)
    first = divergence.first_compile(divs)
    assert [d.aspect for d in divs if d.compile_id == first] == ["graph", "graph_breaks", "guards"]
    assert f"ranks differ first at compile {first} (graph, graph_breaks, guards)" in proc.stdout
    data = yaml.safe_load(out.read_text())
    assert data["divergence"][0]["compile_id"] == first
    guards = next(d for d in data["divergence"] if d["aspect"] == "guards")["groups"]
    assert "L['self'].rank == 0" in guards[0]["value"] and "L['self'].rank == 1" in guards[1]["value"]
    proc = run_cli("breaks", "sample_models/ddp_rank_branch.py", "--nproc", "2", "--backend", "aot_eager",
                   "--format", "json", env=env)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and [r["rank"] for r in doc["ranks"]] == [0, 1]
    mine = [[b for b in r["breaks"] if b["file"].endswith("ddp_rank_branch.py")] for r in doc["ranks"]]
    assert mine[0] == [] and {b["function"] for b in mine[1]} == {"forward"}
    proc = run_cli("guards", "sample_models/ddp_rank_branch.py", "--nproc", "2", "--backend", "aot_eager", env=env)
    assert proc.returncode == 0 and "── rank 0 ──" in proc.stdout and "── rank 1 ──" in proc.stdout


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    """tests/models/rank_crash.py on 3 ranks: rank 0 finishes, rank 1 segfaults, rank 2 hangs and is stopped."""
    d = tmp_path_factory.mktemp("crash")
    out = d / "crash.json"
    proc = run_cli("trace", "tests/models/rank_crash.py", "--nproc", "3", "--backend", "eager", "--stage", "summary",
                   "-o", str(out), env={"TCINSPECT_CACHE_DIR": str(d / "cache")})
    return proc, (serialize.load(out) if out.exists() else None)


@pytest.mark.distributed
def test_a_crashed_rank_is_reported_by_rank_and_the_others_are_kept(crash_run):
    proc, rep = crash_run
    model = MODELS / "rank_crash.py"
    crash, hang = _line_of(model, "ctypes.string_at(0)"), _line_of(model, "time.sleep(0.05)")
    assert proc.returncode == int(ExitCode.CAPTURE_CRASHED), proc.stderr[-3000:]
    assert (f"tcinspect: error: rank 1 of 3 crashed: Segmentation fault (in rank_crash.py:{crash}); rank 2 stopped"
            in proc.stderr) and "Traceback" not in proc.stderr
    ok, crashed, stopped = rep.ranks
    assert (ok.status, ok.summary.graphs, ok.summary.graph_breaks) == ("ok", 2, 1)  # rank 0's whole report
    assert (crashed.status, crashed.where, stopped.status, stopped.where) == (
        "crashed", f"rank_crash.py:{crash}", "stopped", f"rank_crash.py:{hang}")
    for r in (crashed, stopped):  # what each recorded before it ended: the first graph and the break
        assert r.summary.graphs == 1 and r.stages.dynamo.graph_breaks[0].user_frame.function == "model"
    status = divergences(rep.ranks)[0]
    assert status.aspect == "status" and [g.ranks for g in status.groups] == [(0,), (1,), (2,)]
    assert "Segmentation fault (in rank_crash.py" in proc.stdout  # the table is shown too


def test_ranks_that_all_failed_alike_are_not_called_in_agreement():
    failed = [replace(_rank(r), status="error", error="m.py defines no `model`", stages=Stages(), compiles=())
              for r in (0, 1)]
    assert divergences(failed) == ()
    text = render_text(render.divergence(_merged(*failed)))
    assert "Divergence: none" not in text and "not judged" in text and "rank 0 error, rank 1 error" in text
    assert divergence_findings("m.py", _merged(*failed)) == []
