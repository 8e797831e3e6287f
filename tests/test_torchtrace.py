"""TORCH_TRACE logs read into reports: the same report as a live capture of the same run, a GPU log,
directories of rank logs merged with their divergence, and the CLI on logs. Nothing here compiles.

tests/data/torch_trace/torch-2.13.0/ was written by tests/data/torch_trace/record.py: each model captured
once by tcinspect with TORCH_TRACE set, so torch's own log and tcinspect's live report come from one run.
tests/data/torch_trace/torch-2.11.0-h100/ is torch's log of a transformer-block training step on an H100.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cli, render_text
from tcinspect import serialize
from tcinspect.parse import logfiles, rankpool, tracelog
from tcinspect.parse.merge import merge_ranks
from tcinspect.render import ranks as render_ranks
from tcinspect.report import Report

DATA = Path(__file__).parent / "data" / "torch_trace"
CPU = DATA / "torch-2.13.0"
CPU_215 = DATA / "torch-2.15.0"
GPU = DATA / "torch-2.11.0-cuda"
H100 = DATA / "torch-2.11.0-h100" / "transformer_block.log.gz"
RUNS = [(cpu, m) for cpu in (CPU, CPU_215) for m in ("tiny", "graph_breaks", "recompile_scalar")] + \
    [(GPU, m) for m in ("tiny", "graph_breaks", "transformer_block", "lenet_triton_relu")]


def _live(name: str, where: Path = CPU) -> Report:
    return serialize.from_dict(json.loads(gzip.open(where / f"{name}.live.json.gz").read()))


def _comparable(rep: Report, inferred: set) -> dict:
    """The report without what only a live capture knows (the model file, its calls, options given on the
    command line, source lines read from the user's files) and, for kernels whose provenance tcinspect's
    own record gave (``inferred``: the keys of the kernels the log read as inferred), the provenance."""
    doc = serialize.to_dict(rep, timings=False)
    for key in ("target", "options", "calls", "input_errors"):
        doc.pop(key)
    for one in [doc, *doc.get("ranks", ())]:
        _strip(one, inferred)
    return doc


def _strip(doc: dict, inferred: set) -> None:
    doc.pop("calls", None)
    doc.pop("input_errors", None)
    # the recorded live reports predate the shapes section and the recompile advice read from it
    # (tests/test_shapes.py compares both with torch's own events)
    doc.pop("shapes", None)
    doc.pop("memory", None)  # likewise the memory section (tests/test_memory.py compares it with torch's hooks)
    # and the coverage section (tests/test_coverage.py compares a log's with torch's counters of the same run)
    doc.pop("coverage", None)
    for key in ("calls_captured", "unique_graphs", "fallbacks_to_eager"):
        doc.get("summary", {}).pop(key, None)
    for r in doc["stages"]["dynamo"]["recompiles"]:
        r.pop("suggestion")
    doc.pop("log", None)  # the log a rank was read from (a live capture has none)
    doc.pop("origin", None)  # and what the log says of the process that wrote it
    # the recorded live reports predate "a guard is a leaf of the compile's guard tree" (the count
    # is now derived from the guards, which are compared in full below): leave the derived counts out
    for c in doc["compiles"]:
        c.pop("guard_count", None)
    doc.get("summary", {}).pop("guards", None)
    for b in doc["stages"]["dynamo"]["graph_breaks"]:
        b.pop("context")
        # derived when the log is read, after the recorded live reports were written: the model's line a
        # library break was reached from, and the advice for a function torch skips on purpose
        b.pop("model_frame", None)
        b.pop("fix", None)
    for r in doc["stages"]["dynamo"]["recompiles"]:
        r.pop("input_set")  # which input set a recompile came from: the capture loop's, not torch's
    for k in doc["stages"]["aot_autograd"]["user_kernels"]:
        # read live from torch's kernel side table; a log has the copy in Inductor's output code instead
        k.pop("constant_args")
        k.pop("source")
    for o in doc["stages"]["inductor"]["outputs"]:
        o.pop("unknown_provenance", None)  # why the log's unstated kernels are unknown
        for k in o["kernels"]:
            k.pop("modules")  # module paths come from tcinspect's own provenance record only
            if (o["aot_id"], k["name"]) in inferred:
                for field in ("provenance", "source_nodes", "aten_ops", "user_lines", "dynamo_nodes", "frames"):
                    k.pop(field, None)


@pytest.mark.parametrize(("where", "name"), RUNS, ids=[f"{w.name}-{m}" for w, m in RUNS])
def test_a_log_reads_into_the_live_capture_s_report(where, name):
    live, log = _live(name, where), rankpool.read(where / f"{name}.log.gz")
    assert log.torch_version == live.torch_version and log.device == live.device == ("cuda" if where == GPU else "cpu")
    inferred = {(o.aot_id, k.name) for o in log.stages.inductor.outputs for k in o.kernels if k.provenance == "unknown"}
    # only backward kernels lack Inductor's statement in a log (tcinspect's own record carried it live)
    assert {o.part for o in log.stages.inductor.outputs
            if any((o.aot_id, k.name) in inferred for k in o.kernels)} <= {"backward"}
    assert _comparable(log, inferred) == _comparable(live, inferred)
    # the compile-time tree: the same spans and cache look-ups (their outcome: the recorded live reports predate
    # the keys and components, which tests/test_caches.py compares with torch's), timings aside

    def shape(rep: Report) -> list:
        return [(c.compile_id, c.part, c.function, tuple((k.cache, k.part, k.state, k.reason) for k in c.caches),
                 c.restarts, _names(c.root)) for c in rep.compile_time.compiles]

    assert shape(log) == shape(live) and shape(log)


def _names(phase) -> tuple:
    return (phase.name, tuple(_names(p) for p in phase.children)) if phase is not None else ()


def test_a_directory_of_rank_logs_reads_into_the_live_distributed_report():
    """torchrun's two ranks of ddp_rank_branch (rank 1 breaks the graph), logged by torch while tcinspect
    --nproc 2 captured them: the directory gives the same merged report, ranks and divergence."""
    d = CPU / "ddp_rank_branch"
    live = serialize.from_dict(json.loads(gzip.decompress((d / "ddp_rank_branch.live.json.gz").read_bytes())))
    log = rankpool.read(d, jobs=2)
    assert [r.rank for r in log.ranks] == [0, 1]
    assert log.parse is not None and log.parse.files_ignored == 1 and not log.parse.damaged  # the live report
    inferred = {(o.aot_id, k.name) for r in log.ranks for o in r.stages.inductor.outputs for k in o.kernels
                if k.provenance == "unknown"}
    assert _comparable(log.replace(parse=None), inferred) == _comparable(live, inferred)
    from tcinspect.analysis import divergence
    from tcinspect.derived.divergence import divergences

    divs = divergences(log.ranks)
    assert divs == divergences(live.ranks)
    assert divergence.first_compile(divs) == "4/0" and ("", "compile_ids") in [(d.compile_id, d.aspect) for d in divs]
    assert [r.ddp_splits for r in log.ranks] == [r.ddp_splits for r in live.ranks]


def test_the_logs_hold_what_the_models_do():
    assert _live("graph_breaks").summary.graph_breaks == rankpool.read(CPU / "graph_breaks.log.gz").summary.graph_breaks == 3
    rec = rankpool.read(CPU / "recompile_scalar.log.gz").stages.dynamo.recompiles
    assert [r.compile_id for r in rec] == ["0/1"] and "multiplier" in rec[0].reasons[0]


def test_the_h100_log_gives_graphs_kernels_and_inductor_s_provenance():
    rep = rankpool.read(H100)
    assert (rep.torch_version, rep.device, rep.options.backend, rep.parse) == ("2.11.0+cu130", "cuda", "inductor", None)
    s = rep.summary
    assert (s.graphs, s.aot_graphs, s.guards, s.cache_misses) == (1, 3, 64, 2)
    fwd, bwd = rep.stages.inductor.outputs
    assert (fwd.part, bwd.part) == ("forward", "backward")
    # every kernel launched in a wrapper is in its kernel table
    for o in (fwd, bwd):
        launched = [ln.split(".run(")[0].strip() for ln in o.wrapper.splitlines() if ".run(" in ln]
        assert launched and set(launched) <= {k.name for k in o.kernels}
    triton = [k for k in fwd.kernels if k.kind.startswith("triton")]
    assert triton and all(k.provenance == "inductor" and k.source_nodes for k in triton)
    # the log's own kernel -> node mapping names the post-grad nodes each forward Triton kernel fused
    post_grad = {n.name for n in fwd.post_grad_graph.nodes}
    assert all(set(k.source_nodes) <= post_grad for k in triton)
    assert all(k.provenance == "unknown" for k in bwd.kernels)


def test_no_torch_import_reading_a_log():
    code = ("import sys; from tcinspect.cli import main; code = main(['trace', sys.argv[1], '-f', 'json']); "
            "assert code == 0 and 'torch' not in sys.modules, code")
    subprocess.run([sys.executable, "-c", code, str(CPU / "ddp_rank_branch")], check=True, stdout=subprocess.DEVNULL)


def _copy(src: Path, dest: Path) -> None:
    with gzip.open(src) as fh, open(dest, "wb") as out:
        shutil.copyfileobj(fh, out)


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory):
    """Four ranks of tiny, rank 3 of which found its FX graphs in the cache, and a file that is no rank log."""
    d = tmp_path_factory.mktemp("trace")
    for rank in range(4):
        _copy(CPU / "tiny.log.gz", d / f"dedicated_log_torch_trace_rank_{rank}_ab{rank}x.log")
    three = d / "dedicated_log_torch_trace_rank_3_ab3x.log"
    lines = three.read_text().split("\n")  # record headers only: payloads keep their md5
    three.write_text("\n".join(ln if ln.startswith("\t") else ln.replace('"fx_graph_cache_miss"', '"fx_graph_cache_hit"')
                               for ln in lines))
    (d / "notes.txt").write_text("not a log\n")
    return d


def test_a_directory_is_merged_with_cache_divergence(rank_dir):
    rep = rankpool.read(rank_dir, jobs=2)
    assert [r.rank for r in rep.ranks] == [0, 1, 2, 3] and rep.ok
    assert rep.parse is not None and rep.parse.files_ignored == 1 and not rep.parse.damaged
    from tcinspect.analysis.check.ranks import divergence_findings
    from tcinspect.derived.divergence import divergences

    divs = divergences(rep.ranks)
    assert [(d.compile_id, d.aspect) for d in divs] == [("0/0", "cache")]
    assert [(g.ranks, g.value) for g in divs[0].groups] == [
        # the same key as rank 3's hit: the entry was not in the missing ranks' cache directories
        ((0, 1, 2), "AOTAutograd cache miss, FX graph cache forward miss, FX graph cache backward miss; "
                    "forward FX graph cache miss: same key as rank 3 (hit); the entry was not in this rank's "
                    "cache directory; backward FX graph cache miss: same key as rank 3 (hit); the entry was not "
                    "in this rank's cache directory"),
        ((3,), "AOTAutograd cache miss, FX graph cache forward hit, FX graph cache backward hit")]
    # a cache outcome is shown, but ranks that compiled the same graphs pass `check`
    assert [f.status for f in divergence_findings("m", rep)] == ["ok"]


def test_compile_id_divergence_between_rank_logs(tmp_path):
    _copy(CPU / "recompile_scalar.log.gz", tmp_path / "dedicated_log_torch_trace_rank_0_a.log")
    _copy(CPU / "graph_breaks.log.gz", tmp_path / "dedicated_log_torch_trace_rank_1_a.log")
    from tcinspect.derived.divergence import divergences

    rep = rankpool.read(tmp_path)
    divs = divergences(rep.ranks)
    ids = next(d for d in divs if d.aspect == "compile_ids")
    breaks = [m.compile_id for m in rep.ranks[1].compiles]
    assert [g.value for g in ids.groups] == ["2 compiles: 0/0 0/1", f"{len(breaks)} compiles: {' '.join(breaks)}"]
    assert ("0/1", "compile") in [(d.compile_id, d.aspect) for d in divs]


def test_one_rank_of_a_directory(rank_dir):
    one = rankpool.read(rank_dir, rank=3)
    assert not one.ranks and one.summary.cache_hits == 2


def test_cli_reads_a_directory_and_a_rank(capsys, rank_dir, tmp_path):
    code, out, err = cli(capsys, "trace", str(rank_dir), "-f", "json", "--no-timings")
    assert code == 0 and "Traceback" not in err
    doc = json.loads(out)
    assert len(doc["ranks"]) == 4 and doc["divergence"][0]["aspect"] == "cache"
    assert f"read TORCH_TRACE directory {rank_dir}, 4 ranks" in err
    code, out, err = cli(capsys, "codegen", str(rank_dir), "--rank", "3", "-f", "json")
    assert code == 0 and "ranks" not in json.loads(out)
    code, out, err = cli(capsys, "check", str(rank_dir), "--max-graph-breaks", "0")
    assert code == 0, err
    merged = tmp_path / "merged.yaml"  # a saved merged report answers --rank too
    code, _, err = cli(capsys, "trace", str(rank_dir), "-o", str(merged), "-f", "yaml")
    code, out, err = cli(capsys, "breaks", str(merged), "--rank", "2", "-f", "json")
    assert code == 0 and "ranks" not in json.loads(out)
    code, out, err = cli(capsys, "breaks", str(merged), "--rank", "9")
    assert code == 2 and "has no rank 9 (ranks 0-3)" in err
    report = tmp_path / "r.yaml"
    code, _, err = cli(capsys, "trace", str(CPU / "tiny.log.gz"), "-o", str(report))
    code, out, err = cli(capsys, "diff", str(report), str(CPU / "graph_breaks.log.gz"), "-f", "json")
    assert code == 0 and json.loads(out)


@pytest.mark.parametrize("command", ["breaks", "guards", "compile-time"])
def test_every_reader_command_reads_a_log(capsys, command):
    code, out, err = cli(capsys, command, str(CPU / "graph_breaks.log.gz"), "-f", "yaml")
    assert code == 0 and out and "Traceback" not in err


def test_blocks_split_anywhere_give_the_same_events(monkeypatch, tmp_path):
    log = tmp_path / "tiny.log"
    _copy(CPU / "tiny.log.gz", log)
    whole, health = tracelog.read_log(log)
    monkeypatch.setattr(tracelog, "_BLOCK", 7)  # records and payloads cut at every few bytes
    pieces, small = tracelog.read_log(log)
    assert [(e.name, e.compile_id, e.meta, e.payload) for e in pieces] == \
        [(e.name, e.compile_id, e.meta, e.payload) for e in whole]
    assert (small.records, small.payload_mismatches, health.payload_mismatches) == (health.records, 0, 0)


def test_interned_files_compiled_autograd_ids_and_records_without_a_compile_id(tmp_path):
    import hashlib

    payload = "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        return (x,)"
    md5 = hashlib.md5(payload.encode()).hexdigest()
    head = "V1123 07:01:04.270000 5375 torch/_dynamo/convert_frame.py:1624] "
    lines = [
        head + json.dumps({"str": ["/home/user/train.py", 0]}),
        head + json.dumps({"dynamo_start": {"stack": [{"line": 3, "name": "step", "filename": 0}]},
                           "compiled_autograd_id": 0, "frame_id": 1, "frame_compile_id": 0, "attempt": 0}),
        head + json.dumps({"dynamo_output_graph": {}, "compiled_autograd_id": 0, "frame_id": 1,
                           "frame_compile_id": 0, "attempt": 0, "has_payload": md5}),
        *("\t" + ln for ln in payload.split("\n")),
        head + json.dumps({"torch_version": {}}),  # no compile id
    ]
    log = tmp_path / "dedicated_log_torch_trace_x.log"
    log.write_text("\n".join(lines) + "\n")
    events, health = tracelog.read_log(log)
    assert (health.records, health.payload_mismatches, health.lines_not_understood) == (4, 0, 0)
    start, graph, version = events
    assert start.meta["stack"][0]["filename"] == "/home/user/train.py"
    assert graph.compile_id == "!0/1/0" and graph.payload == payload  # torch's CompileId.__str__
    assert version.compile_id == ""


def test_which_files_of_a_directory_are_rank_logs(tmp_path):
    import os

    old, new = tmp_path / "dedicated_log_torch_trace_rank_0_a.log.gz", tmp_path / "dedicated_log_torch_trace_rank_0_b.log.gz"
    for p in (old, new):
        shutil.copy(CPU / "tiny.log.gz", p)
    os.utime(old, (1, 1))  # the job restarted into the same directory: the newer log is the rank's
    shutil.copy(CPU / "recompile_scalar.log.gz", tmp_path / "dedicated_log_torch_trace_rank_1_a.log.gz")
    (tmp_path / "tlparse_output").mkdir()
    found = logfiles.rank_logs(tmp_path)
    assert {r: Path(f.where) for r, f in found.ranks.items()} == {
        0: new, 1: tmp_path / "dedicated_log_torch_trace_rank_1_a.log.gz"}
    assert [(Path(f.where), why) for f, why in found.ignored] == [
        (old, f"an older log of rank 0 (the job restarted?): {new.name} is read")]
    # a process that logged before its process group was up writes no rank: alone, it is rank 0
    single = tmp_path / "single"
    single.mkdir()
    shutil.copy(CPU / "tiny.log.gz", single / "dedicated_log_torch_trace_k2j4.log.gz")
    assert list(logfiles.rank_logs(single).ranks) == [0]
    assert rankpool.read(single).summary == rankpool.read(CPU / "tiny.log.gz").summary


def test_the_divergence_is_found_once_as_ranks_merge_and_an_older_saved_report_gets_it_on_reading(capsys):
    from tcinspect.derived.divergence import divergences

    rep = rankpool.read(CPU / "ddp_rank_branch", jobs=1)
    assert rep.divergence and rep.divergence == divergences(rep.ranks)
    # the views read the report's own divergence, not the ranks again: one emptied shows the ranks agreeing
    agreeing = rep.replace(divergence=())
    assert "ranks differ first at compile 4/0" in render_text(render_ranks.divergence(rep))
    assert "Divergence: none" in render_text(render_ranks.divergence(agreeing))
    # a report saved before the divergence was kept with its ranks: found from the ranks when it is read
    data = serialize.to_dict(rep)
    del data["divergence"]
    assert serialize.from_dict(data).divergence == rep.divergence
    # one saved with it keeps what it says
    assert serialize.from_dict(serialize.to_dict(agreeing)).divergence == ()


def test_each_rank_s_divergence_keys_are_made_where_it_is_read_and_the_reader_only_compares_them(monkeypatch):
    from tcinspect.derived import divergence

    logs = sorted((CPU / "ddp_rank_branch").glob("*.log.gz"))
    worker = rankpool.RankReader(worker=True)  # a pool worker's: the same keys travel once
    entries = [worker.read((r, str(logs[r % 2]))) for r in range(3)]
    assert [bool(data) for _, data in (e.keys for e in entries)] == [True, True, False]
    alone = merge_ranks(entries, "d", (), {})

    def made_again(rank):
        raise AssertionError(f"rank {rank.rank}'s keys were made again by the reader")

    monkeypatch.setattr(divergence, "rank_keys", made_again)
    rep = merge_ranks(entries, "d", (), {})
    monkeypatch.undo()
    assert rep.divergence == alone.divergence == divergence.divergences(rep.ranks)
    assert [(d.compile_id, d.aspect) for d in rep.divergence] == [
        ("4/0", "graph"), ("4/0", "graph_breaks"), ("4/0", "guards"), ("4/0", "kernels"), ("5/0", "compile"),
        ("6/0", "compile"), ("", "compile_ids")]
    assert [g.ranks for g in rep.divergence[2].groups] == [(0, 2), (1,)]


def test_rank_keys_do_not_depend_on_the_process():
    """A rank's keys (its guards are a set) are the same bytes in processes with other string hashes."""
    code = ("import sys; from tcinspect.parse import tracelog; from tcinspect.derived import divergence as d; "
            "from tcinspect.report import RankReport; rep, splits = tracelog.log_report(sys.argv[1]); "
            "k = d.rank_keys(RankReport(0, 'ok', stages=rep.stages, compiles=rep.compiles, ddp_splits=splits)); "
            "print(b''.join(x for _, ds in k.compiles for x in ds).hex())")
    log = str(sorted((CPU / "ddp_rank_branch").glob("*.log.gz"))[0])
    got = {subprocess.run([sys.executable, "-c", code, log], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(got) == 1 and len(got.pop()) > 100
