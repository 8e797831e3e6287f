"""Rank logs compared as one program's: object ids masked in every comparison, logs of several runs (or copies)
said, and the divergence headline leading with what the job feels. No torch: recorded logs and hand-built ranks.

``torch-2.13.0/obj_id_recompile/`` (tests/data/torch_trace/record_obj_id.py): a real 2-rank gloo job whose ranks
recompile on ``___check_obj_id(fn, <id>)``, the id differing by process. The mixed directories are built from it:
copies, a renamed rank, a log whose glog prefixes (date, pid, torch's own lines) and script line were rewritten.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import yaml

from builders.reports import make_report
from helpers import cli, render_text
from tcinspect import serialize
from tcinspect.analysis import divergence as analysis
from tcinspect.analysis.check.ranks import divergence_findings
from tcinspect.derived.divergence import divergences
from tcinspect.parse import rankpool
from tcinspect.parse.merge import merge
from tcinspect.render import ranks as render_ranks
from tcinspect.render import table as single
from tcinspect.report import (
    CompileMetrics,
    DynamoGraph,
    DynamoStage,
    Graph,
    GraphBreak,
    Guard,
    InductorStage,
    Kernel,
    Node,
    OutputCode,
    RankReport,
    Recompile,
    SourceLocation,
    Stages,
)

CPU = Path(__file__).resolve().parent / "data" / "torch_trace" / "torch-2.13.0"
OBJ = CPU / "obj_id_recompile"
LOGS = sorted(OBJ.glob("dedicated_log_torch_trace_rank_*.log.gz"))  # rank 0's, rank 1's


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def _headers(text: str, edit) -> str:
    """The log with ``edit`` applied to each record's first line (payload lines, whose md5 is stated, kept)."""
    return "\n".join(line if line.startswith("\t") else edit(line) for line in text.split("\n"))


def _mixed(rep) -> dict:
    return {m.what: [(g.ranks, g.value) for g in m.groups] for m in rep.mixed_runs}


# ----------------------------------------------------------------------------- A: object ids masked


def test_ranks_of_one_program_that_differ_only_in_object_ids_do_not_diverge():
    rep = rankpool.read(OBJ, jobs=1)
    reasons = [r.stages.dynamo.recompiles[0].reasons for r in rep.ranks]
    # torch's own reason names fn's id, which differs by process; the report keeps it as torch wrote it
    assert all(len(x) == 1 and x[0].startswith("0/0: ___check_obj_id(fn.__code__, ") for x in reasons), reasons
    assert re.findall(r"\d{7,}", reasons[0][0]) != re.findall(r"\d{7,}", reasons[1][0])
    guards = [{g.expression for g in r.stages.dynamo.graphs[0].guards} for r in rep.ranks]
    assert guards[0] != guards[1]  # ID_MATCH guards name ids too
    assert rep.divergence == () and rep.mixed_runs == ()
    assert "Divergence: none — all 2 ranks" in render_text(render_ranks.divergence(rep))
    (finding,) = [f for f in divergence_findings("d", rep) if f.check == "rank divergence"]
    assert finding.status == "ok"
    # `guards` shows the two ranks once, as the same
    assert analysis.guards_key(analysis.rank_report(rep, rep.ranks[0])) == \
        analysis.guards_key(analysis.rank_report(rep, rep.ranks[1]))


def _id_rank(rank: int, obj: int, size: str = "1048576", group: str = "") -> RankReport:
    """A rank whose texts name object ``obj`` (its id, its address): a node target, a recompile reason, a graph
    break, a kernel, a collective's process group, its error. ``size`` is a tensor size; ``group`` a group name."""
    address = f"0x{obj:x}"
    nodes = (Node("placeholder", "l_x_", "L_x_", dtype="f32", shape=(size, "16")),
             Node("call_function", "f", f"<function f at {address}>", "(l_x_,)", dtype="f32", shape=(size, "16")),
             Node("call_function", "ar", "torch.ops._c10d_functional.all_reduce.default",
                  f"(f, 'sum', '{group or obj}')", dtype="f32", shape=(size, "16")),
             Node("output", "output", "output", "ar"))
    graph = Graph("dynamo_output_graph", "", nodes)
    guards = (Guard("identity", "ID_MATCH", "L['fn']", f"___check_obj_id(L['fn'], {obj})"),)
    brk = GraphBreak("0/1", SourceLocation("/p/m.py", 9, f"fn_{obj}", "g()"),
                     f"Unsupported function call: <function g at {address}>")
    stages = Stages(
        dynamo=DynamoStage("ok", "", (DynamoGraph("0/0", "apply", "/p/m.py", 3, graph, guards),
                                      DynamoGraph("0/1", "apply", "/p/m.py", 3, graph, guards)), (brk,),
                           (Recompile("0/1", "apply", (f"___check_obj_id(fn, {obj})",)),)),
        inductor=InductorStage("ok", "", (OutputCode("0/0", "0_forward", "forward", "", (
            Kernel(f"user_kernel_{obj}", "triton"),)),)))
    return RankReport(rank=rank, status="failed", error=f"RuntimeError: <object at {address}>", device="cpu",
                      stages=stages, compiles=(CompileMetrics("0/0", "apply"), CompileMetrics("0/1", "apply")))


def test_every_comparison_masks_object_ids_and_addresses_but_not_sizes():
    a, b = _id_rank(0, 140439264606080), _id_rank(1, 139645370122560)
    assert divergences([a, b]) == ()
    # the same ranks with a real difference: a size (7 digits, like an id) or a process group's name
    sized = divergences([a, _id_rank(1, 139645370122560, size="2097152")])
    assert {(d.compile_id, d.aspect) for d in sized} >= {("0/0", "graph"), ("0/0", "collectives")}
    grouped = divergences([_id_rank(0, 140439264606080, group="1"), _id_rank(1, 139645370122560, group="2")])
    assert {d.aspect for d in grouped} == {"collectives"}
    # what is shown keeps the real values
    (recompiled,) = [d for d in divergences([a, replace(b, stages=replace(b.stages, dynamo=replace(
        b.stages.dynamo, recompiles=(Recompile("0/1", "apply", ("___check_obj_id(x, 139645370122560)",)),))))])]
    assert [g.value for g in recompiled.groups] == ["recompiled: ___check_obj_id(fn, 140439264606080)",
                                                    "recompiled: ___check_obj_id(x, 139645370122560)"]


# ----------------------------------------------------------------------------- B: logs of several runs


def test_one_log_copied_under_two_ranks_names_is_said(tmp_path, capsys):
    for rank in (0, 1):
        shutil.copy(LOGS[0], tmp_path / f"dedicated_log_torch_trace_rank_{rank}_x.log.gz")
    rep = rankpool.read(tmp_path, jobs=1)
    size = len(_text(LOGS[0]).encode())
    mixed = _mixed(rep)
    assert list(mixed) == ["copy", "rank"]
    assert mixed["copy"][0][0] == (0, 1) and mixed["copy"][0][1].startswith(f"{size:,} bytes, CRC-32 ")
    assert mixed["rank"] == [((1,), "records say rank 0")]
    assert [(r.origin.records_rank, r.origin.size) for r in rep.ranks] == [(0, size), (0, size)]
    code, out, err = cli(capsys, "trace", str(tmp_path), "--stage", "summary", "-f", "yaml")
    assert code == 0
    warning = next(line for line in err.splitlines() if "not one run's" in line)
    assert warning.startswith("tcinspect: warning: these rank logs are not one run's: copies of one log (ranks 0-1: ")
    assert "records of another rank than the file's (rank 1: records say rank 0)" in warning
    data = yaml.safe_load(out)
    assert [m["what"] for m in data["mixed_runs"]] == ["copy", "rank"]
    assert data["ranks"][1]["origin"]["records_rank"] == 0
    assert serialize.from_dict(data).mixed_runs == rep.mixed_runs  # it reads back
    code, out, _ = cli(capsys, "guards", str(tmp_path), "-f", "json")  # a command's own document has it too
    assert code == 0 and [m["what"] for m in json.loads(out)["mixed_runs"]] == ["copy", "rank"]
    from tcinspect.render import html

    section = html.render(rep)
    section = section[section.index('<section id="ranks">'):]
    assert "these rank logs are not one run&#x27;s: copies of one log" in section  # the page says it too


def test_the_recorded_job_itself_is_one_run(capsys):
    code, _, err = cli(capsys, "trace", str(OBJ), "--stage", "summary")
    assert code == 0 and "not one run's" not in err
    rep = rankpool.read(OBJ, jobs=1)
    origins = [r.origin for r in rep.ranks]
    assert [o.records_rank for o in origins] == [0, 1] and origins[0].pid != origins[1].pid
    assert origins[0].torch_version == "2.13.0+cpu" and origins[0].script.endswith("record_obj_id.py:79")
    assert "dynamo_start torch/_dynamo/convert_frame.py:303" in origins[0].torch_lines
    assert "mixed_runs" not in serialize.to_dict(rep) and all("origin" in r for r in serialize.to_dict(rep)["ranks"])


def test_a_rank_log_renamed_to_another_rank_is_said(tmp_path):
    shutil.copy(LOGS[0], tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    shutil.copy(LOGS[1], tmp_path / "dedicated_log_torch_trace_rank_2_x.log.gz")
    rep = rankpool.read(tmp_path, jobs=1)
    assert _mixed(rep) == {"rank": [((2,), "records say rank 1")]}


def test_copies_of_one_process_s_log_with_the_rank_edited_are_said(tmp_path):
    """As ranks 1-4 of tlparse's multi-rank sample: one process's log under several ranks, its "rank" edited."""
    shutil.copy(LOGS[0], tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log").write_text(
        _headers(_text(LOGS[0]), lambda line: line.replace('"rank": 0,', '"rank": 1,')))
    rep = rankpool.read(tmp_path, jobs=1)
    started = rep.ranks[0].origin.started
    assert re.fullmatch(r"\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", started)
    assert _mixed(rep) == {"process": [((0, 1), f"pid {rep.ranks[0].origin.pid}, first record {started}")]}


def test_a_log_of_another_day_torch_and_script_is_said(tmp_path, capsys):
    """Rank 1's log as if written on another day, by another process, another torch build (its own logging lines
    moved) and another version of the script (the line that started the first compile)."""
    def elsewhere(line: str) -> str:
        line = re.sub(r"^V\d{4} \d\d:\d\d:\d\d\.(\d{6}) \d+ ", r"V1203 09:00:07.\1 99999 ", line)
        line = line.replace("torch/_dynamo/convert_frame.py:303]", "torch/_dynamo/convert_frame.py:310]")
        return line.replace('{"line": 79, "name": "<module>"', '{"line": 81, "name": "<module>"')

    shutil.copy(LOGS[0], tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log").write_text(_headers(_text(LOGS[1]), elsewhere))
    rep = rankpool.read(tmp_path, jobs=1)
    mixed = _mixed(rep)
    assert list(mixed) == ["started", "torch", "script"]
    day = rep.ranks[0].origin.started[:14]
    assert mixed["started"] == [((0,), f"first record {day}"), ((1,), "first record 12-03 09:00:07")]
    assert mixed["torch"] == [((0,), "torch 2.13.0+cpu; dynamo_start logged at torch/_dynamo/convert_frame.py:303"),
                              ((1,), "torch 2.13.0+cpu; dynamo_start logged at torch/_dynamo/convert_frame.py:310")]
    assert mixed["script"] == [((0,), "first compile from record_obj_id.py:79"),
                               ((1,), "first compile from record_obj_id.py:81")]
    code, out, err = cli(capsys, "trace", str(tmp_path), "--stage", "summary")
    assert code == 0
    assert ("tcinspect: warning: these rank logs are not one run's: written hours or days apart (rank 0: first "
            f"record {day}; rank 1: first record 12-03 09:00:07); by another torch") in err
    assert "logs: not one run's — written hours or days apart (rank 0 / rank 1)" in out


def test_torch_versions_are_compared_and_a_missing_one_is_unknown(tmp_path, capsys):
    shutil.copy(LOGS[0], tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log").write_text(
        _headers(_text(LOGS[1]), lambda line: line.replace('"pytorch_version": "2.13.0+cpu"',
                                                           '"pytorch_version": "2.14.0+cpu"')))
    rep = rankpool.read(tmp_path, jobs=1)
    assert _mixed(rep) == {"torch": [((0,), "2.13.0+cpu"), ((1,), "2.14.0+cpu")]}
    # a torch that logs no version (compilation_metrics without pytorch_version, as torch of August 2025 wrote)
    none = tmp_path / "none"
    none.mkdir()
    for rank, log in enumerate(LOGS):
        (none / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_text(
            _headers(_text(log), lambda line: line.replace('"pytorch_version": "2.13.0+cpu", ', "")))
    rep = rankpool.read(none, jobs=1)
    assert rep.torch_version == "" and rep.mixed_runs == ()
    assert "torch unknown · cpu" in render_text(single.header(rep))
    assert "torch  " not in render_text(single.header(rep))


# ----------------------------------------------------------------------------- C: the consequence first


def _guarded_rank(rank: int, *, later: bool) -> RankReport:
    """A rank that guards on its own rank at 0/0 and, with ``later``, compiles 1/0, whose graph all-reduces."""
    x = Node("placeholder", "l_x_", "L_x_", dtype="f32", shape=("8",))
    graph = Graph("dynamo_output_graph", "", (x, Node("output", "output", "output", "l_x_")))
    reduce = Graph("dynamo_output_graph", "", (x, Node("call_function", "ar", "torch.ops._c10d_functional.all_reduce"
                                                       ".default", "(l_x_, 'sum', '0')", dtype="f32", shape=("8",)),
                                               Node("output", "output", "output", "ar")))
    graphs = [DynamoGraph("0/0", "step", "/p/m.py", 3, graph, (Guard("value", "EQUALS_MATCH", "L['rank']",
                                                                     f"L['rank'] == {rank}"),))]
    if later:
        graphs.append(DynamoGraph("1/0", "sync", "/p/m.py", 9, reduce))
    return RankReport(rank=rank, status="ok", device="cpu", stages=Stages(dynamo=DynamoStage("ok", "", tuple(graphs))),
                      compiles=tuple(CompileMetrics(g.compile_id, g.function) for g in graphs))


def test_the_headline_names_the_compiles_and_collectives_only_some_ranks_run_before_guard_text():
    ranks = [_guarded_rank(0, later=True), _guarded_rank(1, later=True), _guarded_rank(2, later=False)]
    rep = merge(make_report(stages=ranks[0].stages, compiles=ranks[0].compiles), ranks)
    assert analysis.first_compile(rep.divergence) == "0/0"  # the ranks first differ in a guard
    text = render_text(render_ranks.divergence(rep))
    head = " ".join(text[:text.index("┏")].split())  # as one line
    assert head.startswith("Divergence: rank 2 did not compile 1/0 (sync), which ranks 0-1 compiled; ranks 0-1 run 1 "
                           "collective in the compiled graphs, rank 2 runs 0 (a collective that only some ranks of "
                           "its group issue hangs a live job)")
    assert head.index("did not compile") < head.index("ranks differ first at compile 0/0 (guards)")
    (finding,) = [f for f in divergence_findings("m.py", rep) if f.check == "rank divergence"]
    assert finding.message.startswith("ranks diverge: rank 2 did not compile 1/0 (sync), which ranks 0-1 compiled; ")
    assert "; first at compile 0/0 (guards): " in finding.message


def test_the_headline_of_recorded_ranks_one_of_which_stopped_compiling_names_what_it_did_not_run(tmp_path):
    """Rank 1's log cut before its recompile (as ranks 5-6 of tlparse's sample, which never compiled two graphs):
    rank 1 issues one all-reduce where rank 0 issues two."""
    shutil.copy(LOGS[0], tmp_path / "dedicated_log_torch_trace_rank_0_x.log.gz")
    text = _text(LOGS[1])
    cut = re.search(r'^V[^\n]*"frame_compile_id": 1,', text, re.MULTILINE)
    assert cut is not None
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log").write_text(text[:cut.start()])
    rep = rankpool.read(tmp_path, jobs=1)
    shown = render_text(render_ranks.divergence(rep), width=300)
    assert shown.startswith("Divergence: rank 1 did not compile 0/1 (apply), which rank 0 compiled; rank 0 runs 2 "
                            "collectives in the compiled graphs, rank 1 runs 1 (a collective")
    assert "\n  ranks differ first at compile 0/1 (compile)" in shown
    assert json.loads(serialize.dumps(rep, "json"))["divergence"][0]["aspect"] == "compile"
