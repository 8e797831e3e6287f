"""TORCH_TRACE logs as jobs leave them: rank logs named by torch or by log collectors, what was read and
what was not, the parallel reader, and logs on a server (an S3-compatible one and plain HTTP, both started
here on 127.0.0.1). No torch: the logs are the ones torch wrote (tests/data/torch_trace/record.py)."""

from __future__ import annotations

import gzip
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from builders.reports import make_report
from helpers import DATA, ROOT, cli, render_text
from tcinspect import serialize
from tcinspect.errors import TraceLogError
from tcinspect.parse import logfiles, rankpool

CPU = Path(__file__).resolve().parent / "data" / "torch_trace" / "torch-2.13.0"
DDP = CPU / "ddp_rank_branch"
RANK0, RANK1 = DDP / "dedicated_log_torch_trace_rank_0_pznkmk13.log.gz", DDP / "dedicated_log_torch_trace_rank_1_yh9colpj.log.gz"


def _plain(src: Path, dest: Path) -> Path:
    with gzip.open(src) as fh, open(dest, "wb") as out:
        shutil.copyfileobj(fh, out)
    return dest


def _doc(rep) -> dict:
    """The report as saved, without where it was read from and its timings."""
    doc = serialize.to_dict(rep, timings=False)
    doc.pop("target")
    for r in doc.get("ranks", ()):
        r.pop("log", None)
    doc.pop("parse", None)
    return doc


@pytest.fixture(scope="module")
def torch_named():
    return rankpool.read(DDP, jobs=1)


def test_logs_renamed_by_a_collector_read_as_torch_named_ones(tmp_path, torch_named):
    """No random suffix, another prefix, .gz or not, a folder per node: the same two ranks."""
    shutil.copy(RANK0, tmp_path / "dedicated_log_torch_trace_rank_0.log.gz")
    (tmp_path / "node1").mkdir()
    _plain(RANK1, tmp_path / "node1" / "trace-rank1.log")
    (tmp_path / "README.md").write_text("collected from 2 nodes\n")
    rep = rankpool.read(tmp_path, jobs=1)
    assert [(r.rank, r.log) for r in rep.ranks] == [(0, "dedicated_log_torch_trace_rank_0.log.gz"),
                                                    (1, "node1/trace-rank1.log")]
    assert _doc(rep) == _doc(torch_named)
    assert rep.parse is not None and [(f.name, f.reason) for f in rep.parse.ignored_files] == [
        ("README.md", "not a TORCH_TRACE log (its first line is not a glog record with JSON)")]


def test_the_rank_only_in_the_records(tmp_path, torch_named):
    """Files named without a rank (a process that first logged before init_process_group, or a collector's
    names): each rank from the ``"rank": N`` torch adds to its records."""
    shutil.copy(RANK1, tmp_path / "a.log.gz")  # rank 1's records, a name that says nothing
    _plain(RANK0, tmp_path / "dedicated_log_torch_trace_k2j4.log")
    found = logfiles.rank_logs(tmp_path)
    assert {r: f.name for r, f in found.ranks.items()} == {0: "dedicated_log_torch_trace_k2j4.log", 1: "a.log.gz"}
    assert _doc(rankpool.read(tmp_path, jobs=1)) == _doc(torch_named)


def test_restarts_and_logs_without_a_rank_are_listed_with_why(tmp_path):
    old, new = tmp_path / "rank_0.log.gz", tmp_path / "rank0-restarted.log.gz"
    shutil.copy(RANK0, old)
    shutil.copy(RANK0, new)
    os.utime(old, (1, 1))
    shutil.copy(CPU / "tiny.log.gz", tmp_path / "worker.log.gz")  # a log that states no rank, beside rank logs
    found = logfiles.rank_logs(tmp_path)
    assert {r: f.name for r, f in found.ranks.items()} == {0: new.name}
    assert [(f.name, why) for f, why in found.ignored] == [
        (old.name, f"an older log of rank 0 (the job restarted?): {new.name} is read"),
        ("worker.log.gz", "a log with no rank in its name or records, beside rank logs")]


def test_the_cli_says_what_it_read_and_what_it_did_not(capsys, tmp_path):
    shutil.copy(RANK0, tmp_path / "rank_0.log.gz")
    shutil.copy(RANK1, tmp_path / "rank_1.log.gz")
    (tmp_path / "job.yaml").write_text("nodes: 1\n")
    code, _out, err = cli(capsys, "trace", str(tmp_path), "--stage", "summary", "--jobs", "1")
    assert code == 0, err
    assert f"read TORCH_TRACE directory {tmp_path}, 2 ranks (rank 0: rank_0.log.gz … rank 1: rank_1.log.gz)" in err
    assert "not read, 1 files: job.yaml (not a TORCH_TRACE log" in err


def test_a_directory_with_no_log_names_what_it_saw(capsys, tmp_path):
    (tmp_path / "stdout.log").write_text("epoch 1 loss 0.3\n")
    (tmp_path / "metrics.json").write_text("{}\n")
    code, out, err = cli(capsys, "trace", str(tmp_path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{tmp_path} holds no TORCH_TRACE log: it has metrics.json, stdout.log, and none starts with a glog " \
           "line of JSON" in err


def test_parallel_reading_gives_the_same_report_with_memory_for_a_few_ranks_a_worker(tmp_path, monkeypatch):
    for rank in range(12):
        shutil.copy(RANK0 if rank % 3 else RANK1, tmp_path / f"rank_{rank}.log.gz")
    one = rankpool.read(tmp_path, jobs=1)
    entries = [(r, str(tmp_path / f"rank_{r}.log.gz")) for r in range(12)]

    def ahead_of_a_slow_reader(budget, wanted):
        """Ranks begun and not yet handed back at each entry the reader takes, and each worker's bytes in flight. At
        each entry the reader waits (up to 10 s, however busy the machine) until the workers have begun ``wanted``
        ranks it has not taken (or all that are left), then a little longer: how far ahead they get is what the
        budget allows, not how fast this machine is right now."""
        results, ahead, flying = [], [], []
        with monkeypatch.context() as m:
            m.setattr(rankpool, "_IN_FLIGHT", budget)
            pool = rankpool._Pool(entries, 2, None)
        with pool:
            for entry in pool:
                results.append(entry[0])
                deadline = time.monotonic() + 10
                while (pool.schedule.begun.value - len(results) < min(wanted, 12 - len(results))
                       and time.monotonic() < deadline):
                    time.sleep(0.01)
                time.sleep(0.02)
                ahead.append(pool.schedule.begun.value - len(results))
                flying.append(list(pool.schedule.in_flight))
            assert list(pool.schedule.in_flight) == [0, 0]
        assert sorted(results) == list(range(12))
        return ahead, flying

    # a budget below one entry: each worker has one entry waiting for the reader and one rank being read, at most
    ahead, flying = ahead_of_a_slow_reader(1, 3)
    assert max(ahead) <= 2 * 2 and max(ahead) > 2, ahead
    assert all(b <= rankpool._ENTRY_BYTES + 2_000_000 for f in flying for b in f), flying
    # the default budget (32 MB a worker) holds many of these small entries: the workers run ahead of the reader,
    # and what they have in flight stays within it
    ahead, flying = ahead_of_a_slow_reader(rankpool._IN_FLIGHT, 5)
    assert max(ahead) > 2 * 2, ahead
    assert all(b <= rankpool._IN_FLIGHT for f in flying for b in f), flying
    two = rankpool.read(tmp_path, jobs=2)
    assert serialize.to_dict(two, timings=False) == serialize.to_dict(one, timings=False)
    # ranks that compiled alike share their parts, read once
    assert two.ranks[1].stages.inductor is two.ranks[2].stages.inductor


def test_a_worker_that_fails_or_is_killed_ends_the_reading_with_one_line(tmp_path, monkeypatch, capsys):
    for rank in range(4):
        shutil.copy(RANK0, tmp_path / f"rank_{rank}.log.gz")
    entries = [(r, str(tmp_path / f"rank_{r}.log.gz")) for r in range(4)]
    real = rankpool.RankReader.read

    def failing(reader, entry):
        if entry[0] == 3:
            raise ValueError("a bug in reading rank 3")
        return real(reader, entry)

    monkeypatch.setattr(rankpool.RankReader, "read", failing)  # the forked workers have it too
    with pytest.raises(ValueError, match="a bug in reading rank 3"):
        list(rankpool._map(entries, 2))

    def killed(reader, entry):
        if entry[0] == 3:
            os.kill(os.getpid(), 9)
        return real(reader, entry)

    monkeypatch.setattr(rankpool.RankReader, "read", killed)
    with pytest.raises(TraceLogError, match=r"ended with exit code -9 \(killed: out of memory\?\)") as exc:
        list(rankpool._map(entries, 2))
    assert exc.value.fix == "read with fewer processes (--jobs 2, or --jobs 1)"
    code, out, err = cli(capsys, "trace", str(tmp_path), "--jobs", "2")
    assert code == 2 and out == "" and "ended with exit code -9" in err and "Traceback" not in err


def test_a_url_without_fsspec_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)
    code, _out, err = cli(capsys, "trace", "s3://bucket/trace/")
    assert code == 2 and "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("tcinspect: error:")]
    assert len(errors) == 1 and "pip install 'tcinspect[remote]'" in errors[0], err


# ----------------------------------------------------------------------------- servers on 127.0.0.1


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A directory of rank logs as a collector left them, and what reading it locally gives."""
    d = tmp_path_factory.mktemp("served") / "trace"
    (d / "node0").mkdir(parents=True)
    shutil.copy(RANK0, d / "node0" / "dedicated_log_torch_trace_rank_0.log.gz")
    _plain(RANK1, d / "rank_1.log")
    (d / "notes.txt").write_text("not a log\n")
    return d, rankpool.read(d, jobs=1)


@pytest.fixture
def http_server(served):
    pytest.importorskip("aiohttp")  # fsspec's HTTP file system (tcinspect[remote])
    root = served[0].parent

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # no request log on stderr
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):  # a probe that read a file's start closes early
            pass

    server = Server(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_logs_over_http(capsys, http_server, served):
    start = time.monotonic()
    rep = rankpool.read(f"{http_server}/trace/", jobs=1)  # the server's directory listing
    assert [(r.rank, r.log) for r in rep.ranks] == [(0, "node0/dedicated_log_torch_trace_rank_0.log.gz"),
                                                    (1, "rank_1.log")]
    assert _doc(rep) == _doc(served[1]) and rep.target.path == f"{http_server}/trace/"
    assert [f.name for f in rep.parse.ignored_files] == ["notes.txt"]
    one = rankpool.read(f"{http_server}/trace/rank_1.log")  # one file, streamed
    assert one.summary == rankpool.read(served[0] / "rank_1.log").summary
    code, out, err = cli(capsys, "breaks", f"{http_server}/trace/", "--jobs", "2", "-f", "json")
    assert code == 0 and "Traceback" not in err and '"ranks"' in out
    code, out, err = cli(capsys, "trace", f"{http_server}/trace/missing.log")
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    assert time.monotonic() - start < 60


@pytest.fixture
def s3_server(served, monkeypatch):
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    import logging

    import s3fs

    monkeypatch.setattr(logging.getLogger("werkzeug"), "disabled", True)  # the server's request log
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    fs.mkdir("jobs")
    fs.put(str(served[0]), "jobs/run1/trace", recursive=True)
    yield "s3://jobs/run1/trace"
    s3fs.S3FileSystem.clear_instance_cache()
    server.stop()


def test_logs_on_an_s3_compatible_server(capsys, s3_server, served):
    start = time.monotonic()
    rep = rankpool.read(s3_server, jobs=1)
    assert [(r.rank, r.log) for r in rep.ranks] == [(0, "node0/dedicated_log_torch_trace_rank_0.log.gz"),
                                                    (1, "rank_1.log")]
    assert _doc(rep) == _doc(served[1])
    assert [f.name for f in rep.parse.ignored_files] == ["notes.txt"]
    code, out, err = cli(capsys, "trace", s3_server, "--rank", "1", "-f", "json")
    assert code == 0 and "Traceback" not in err and '"ranks"' not in out
    code, out, err = cli(capsys, "check", s3_server + "/", "--max-graph-breaks", "10", "--jobs", "2")
    assert code == 1 and "rank divergence" in out and "Traceback" not in err  # rank 1 took a branch rank 0 did not
    code, out, err = cli(capsys, "trace", "s3://jobs/run1/nothing-here/")
    assert code == 2 and "Traceback" not in err
    assert time.monotonic() - start < 60


# ----------------------------------------------------------------------------- many ranks


def test_the_landing_view_of_many_ranks_groups_them_and_shows_the_outliers(torch_named):
    """48 ranks from the recorded two (every eighth takes rank 1's branch), one that compiled nothing and
    one whose guards differ: a row per group, and the empty rank hides no other divergence."""
    from dataclasses import replace

    from tcinspect.derived import divergence
    from tcinspect.parse.merge import merge
    from tcinspect.render import ranks as render
    from tcinspect.report import RankReport

    zero, one = torch_named.ranks
    odd = zero.stages.dynamo.graphs[-1]
    odd = replace(odd, guards=odd.guards[:5])
    fewer_guards = replace(zero.stages, dynamo=replace(zero.stages.dynamo,
                                                       graphs=(*zero.stages.dynamo.graphs[:-1], odd)))
    ranks = [RankReport(rank=r, status="ok") if r == 3 else
             replace(zero, rank=r, stages=fewer_guards) if r == 40 else
             replace(one if r % 8 == 5 else zero, rank=r) for r in range(48)]
    rep = merge(torch_named, ranks)
    table = render_text(render.ranks_table(rep))
    assert "Ranks · 48 (TORCH_TRACE logs) · 4 groups" in table
    rows = [ln for ln in table.splitlines() if ln.startswith("│ rank")]
    assert len(rows) == 4 and "ranks 0-2, 4, 6-12, 14-20, 22-28, 30-36, … (40 ranks)" in rows[0]
    assert "ranks 5, 13, 21, 29, 37, 45" in rows[1] and "│  6 │" in rows[1]
    divs = divergence.divergences(rep.ranks)
    assert {(d.compile_id, d.aspect) for d in divs} >= {("4/0", "compile"), ("4/0", "graph_breaks"), ("4/0", "guards")}
    guards = next(d for d in divs if d.aspect == "guards")
    assert (40,) in [g.ranks for g in guards.groups]
    shown = render_text(render.divergence(rep))
    assert "rank 40" in shown and "rank 3 " in shown


def test_a_long_divergence_is_cut_in_the_table_only():
    from tcinspect.render import ranks as render
    from tcinspect.report import Divergence, RankGroup, RankReport, Target

    groups = tuple(RankGroup((r,), f"value {r}") for r in range(20))
    rep = make_report(torch_version="", target=Target(kind="torch_trace"),
                      ranks=tuple(RankReport(rank=r, status="ok") for r in range(20)))
    text = render_text(render.divergence_table(rep, [Divergence("0/0", "graph", groups)] * 40))
    assert "… 12 ranks" in text and "in 12 more groups (use --format yaml)" in text
    assert "… 10 more divergences (use --format yaml)" in text
    assert render.ranks_short(list(range(0, 100, 2))) == "ranks 0, 2, 4, 6, 8, 10, … (50 ranks)"


def test_the_pool_is_sized_to_the_idle_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert rankpool.workers(None, 256) == 16 and rankpool.workers(None, 3) == 3 and rankpool.workers(4, 256) == 4
    monkeypatch.setattr(os, "getloadavg", lambda: (13.6, 0.0, 0.0))  # other jobs keep 13-14 cores busy
    assert rankpool.workers(None, 256) == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0, 0.0, 0.0))
    assert rankpool.workers(None, 256) == 1


def test_the_benchmarks_varied_ranks_are_logs_torch_could_have_written(tmp_path):
    """``bench/rank_logs.py --vary``: each rank on its own GPU of eight and started later, its payloads' md5s
    written again, so the reader finds every payload whole and each rank's graphs on its own device."""
    source = DATA / "torch_trace" / "torch-2.11.0-h100" / "transformer_block.log.gz"
    out = tmp_path / "ranks"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "rank_logs.py"), str(out), "--ranks", "3",
                           "--source", str(source), "--vary"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    logs = sorted(out.iterdir(), key=lambda p: int(p.name.split("_rank_")[1].split("_")[0]))
    assert logs[0].read_bytes() == gzip.decompress(source.read_bytes())  # rank 0 is the recording itself
    assert len({p.read_bytes() for p in logs}) == 3
    rep = rankpool.read(out, jobs=1)
    assert rep.parse is None or (rep.parse.payload_mismatches, rep.parse.truncated_payloads) == (0, 0)
    for rank, r in enumerate(rep.ranks):
        code = r.stages.dynamo.graphs[0].graph.code
        assert f"cuda:{rank}" in code and (rank == 0 or "cuda:0" not in code)
        assert r.summary == rep.ranks[0].summary


def test_the_benchmarks_varied_outliers_log_their_own_gpu(tmp_path):
    """With ``--vary``, the rank cut short and the rank that hit the cache are made from their own rank's log: a
    real job's rank killed on GPU 1 logged GPU 1's text (a reader keeps each GPU's graphs, so a foreign one would
    cost its worker a parse no real rank asks for)."""
    source = DATA / "torch_trace" / "torch-2.11.0-h100" / "transformer_block.log.gz"
    out = tmp_path / "ranks"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "rank_logs.py"), str(out), "--ranks", "10",
                           "--source", str(source), "--vary"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    log = {int(p.name.split("_rank_")[1].split("_")[0]): p for p in out.iterdir()}
    cut, hit = log[9].read_bytes(), log[5].read_bytes()
    assert b"cuda:1" in cut and b"cuda:0" not in cut
    assert len(cut) < 0.7 * len(log[8].read_bytes())
    assert b"cuda:5" in hit and b"cuda:0" not in hit and b'"fx_graph_cache_hit"' in hit
    rep = rankpool.read(log[5])
    assert rep.parse is None or rep.parse.payload_mismatches == 0
    assert "cuda:5" in rep.stages.dynamo.graphs[0].graph.code
