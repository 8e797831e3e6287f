"""Reading rank logs fast gives the same reports: JSON as json.loads reads it, parsers that keep their results
across ranks, chromium spans read from bytes, pool workers that send each part once. Pure: no torch."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import random
import re
from pathlib import Path

import pytest

from tcinspect import jsonfast, serialize
from tcinspect.errors import TraceLogError
from tcinspect.parse import compile_time as compiletime
from tcinspect.parse import events as ev_mod
from tcinspect.parse import memo, rankpool, tracelog
from tcinspect.parse.merge import RankEntry, merge_ranks
from tcinspect.report import CacheKeyComponent

DDP = Path(__file__).resolve().parent / "data" / "torch_trace" / "torch-2.13.0" / "ddp_rank_branch"
RANK0, RANK1 = DDP / "dedicated_log_torch_trace_rank_0_pznkmk13.log.gz", DDP / "dedicated_log_torch_trace_rank_1_yh9colpj.log.gz"

# what strict JSON parsers read differently from json.loads, or refuse: each must read as json.loads reads it
JSON_CASES = [b'123456789012345678901234567890', b'-9223372036854775809', b'18446744073709551616', b'1e400', b'-1e400',
              b'NaN', b'[Infinity, -Infinity]', b'"\\ud800"', b'"\\ud83d\\ude00"', b'\xef\xbb\xbf{"a": 1}',
              b'{"a": 1, "a": 2, "b": 3}', b'[0.1, 5e-324, 1.7976931348623157e308, -0.0, 1E5, 4.35]', b'"\\u0000"',
              b'"\xc3\xa9"', b'"\xff"', b'1.', b'01', b'', b'{"k": [1, {"n": null, "t": true}]} ', b'{"a": 1} x']


def _outcome(fn, data):
    try:
        value = fn(data)
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError alike
        return "error", type(exc).__name__
    return "value", repr(value)


@pytest.mark.parametrize("data", JSON_CASES)
@pytest.mark.parametrize("msgspec", [True, False], ids=["msgspec", "without msgspec"])
def test_json_reads_every_input_as_json_loads(data, msgspec, monkeypatch):
    if not msgspec:
        monkeypatch.setattr(jsonfast, "_decode", jsonfast._unavailable)
    assert _outcome(jsonfast.loads, data) == _outcome(json.loads, data)
    text = data.decode("utf-8", errors="replace")
    assert _outcome(jsonfast.loads, text) == _outcome(json.loads, text)
    assert _outcome(jsonfast.loads_text, data) == _outcome(json.loads, text)


def test_memoized_results_live_only_across_ranks():
    calls = []

    @memo.memoized
    def parse(text, graph=None):
        calls.append(text)
        return (text.upper(), graph)

    assert parse("a") == ("A", None) and parse("a") == ("A", None) and len(calls) == 2  # off: every call parses
    graph, twin = ["a graph"], ["a graph"]
    with memo.across_ranks():
        first = parse("a", graph)
        assert parse("a", graph) is first and len(calls) == 3  # equal strings, the same object: kept
        assert parse("a", twin) == first and len(calls) == 4  # an equal object that is another: parsed (by identity)
        assert parse("a", graph=graph) == first and len(calls) == 5  # keywords: never kept
        assert parse("a", ("t", [])) == ("A", ("t", [])) and len(calls) == 6  # unhashable: never kept
    with memo.across_ranks():
        parse("a", graph)
        assert len(calls) == 7  # dropped when the reading ended


def test_memoized_results_are_bounded(monkeypatch):
    monkeypatch.setattr(memo, "BUDGET", 1000)
    calls = []

    @memo.memoized
    def parse(text):
        calls.append(text)
        return len(text)

    with memo.across_ranks():
        for i in range(10):
            parse(f"{i}" * 300)
        parse("0" * 300)  # the oldest was dropped to keep within the budget
        parse("9" * 300)  # the newest is kept
    assert len(calls) == 11


def _rank_dir(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "ranks"
    d.mkdir()
    logs = []
    for src in (RANK0, RANK1):
        with gzip.open(src) as fh:
            logs.append(fh.read())
    for rank in range(n):
        data = logs[1 if rank % 4 == 1 else 0]
        if rank == n - 1:
            data = data[: len(data) * 3 // 5]  # killed mid-write
        (d / f"dedicated_log_torch_trace_rank_{rank}_abcd{rank:04d}.log").write_bytes(data)
    return d


def test_ranks_read_with_kept_results_and_by_workers_as_each_alone(tmp_path, monkeypatch):
    d = _rank_dir(tmp_path, 6)
    fast = serialize.to_dict(rankpool.read(d, jobs=1), timings=False)
    assert serialize.to_dict(rankpool.read(d, jobs=2), timings=False) == fast
    # parsing every rank afresh (no result kept across ranks) reads the same report
    monkeypatch.setattr(memo, "_on", False)
    monkeypatch.setattr(memo, "across_ranks", lambda: _Nothing())
    assert serialize.to_dict(rankpool.read(d, jobs=1), timings=False) == fast


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_worker_sends_each_part_once(tmp_path):
    d = _rank_dir(tmp_path, 3)
    logs = sorted(d.iterdir())
    worker = rankpool.RankReader(worker=True)
    first = worker.read((0, str(logs[0])))
    again = worker.read((2, str(logs[0])))
    other = worker.read((1, str(logs[1])))
    assert all(data for _, data in first.parts)
    assert [digest for digest, _ in again.parts] == [digest for digest, _ in first.parts]
    assert not any(data for _, data in again.parts)  # the reader has them from the first
    assert any(data for _, data in other.parts)  # rank 1 took another branch: its own parts travel
    merged = merge_ranks([first, other, again], str(d), (), {})
    alone = merge_ranks([rankpool.read_rank((r, str(p))) for r, p in ((0, logs[0]), (1, logs[1]),
                                                                                    (2, logs[0]))], str(d), (), {})
    assert serialize.to_dict(merged, timings=False) == serialize.to_dict(alone, timings=False)
    assert merged.ranks[2].stages.dynamo is merged.ranks[0].stages.dynamo


_OLD_COMPONENT = re.compile(r"\[(?P<hash>[^\]]*)\] (?P<name>[^:]+?): (?P<value>.*)", re.DOTALL)


def _components_as_before(items):
    out = []
    for item in items:
        m = _OLD_COMPONENT.match(item) if isinstance(item, str) else None
        if m is not None:
            value = m["value"].strip()
            if len(value) > compiletime.COMPONENT_VALUE_CHARS:
                value = value[:compiletime.COMPONENT_VALUE_CHARS] + "…"
            out.append(CacheKeyComponent(m["name"].strip(), m["hash"], value))
    return tuple(out)


def test_cache_key_components_are_cut_as_before():
    rng = random.Random(0)
    chars = [" ", "\t", "\n", "a", ":", "]", "[", "\u2003", "\x1c"]
    for _ in range(3000):
        body = "".join(rng.choice(chars) for _ in range(rng.choice([0, 5, 159, 160, 161, 320, 321, 700])))
        item = rng.choice(["[h] n: ", "[h]  n :  ", "[ab] na:me: ", "[] : ", "x", "[h] n:"]) + body + \
            rng.choice(["", "   ", " " * 200, "\n" * 170, "z"])
        items = [item, 3, {"x": 1}] if rng.random() < 0.1 else [item]
        assert compiletime.key_components(items) == _components_as_before(items), items
        with memo.across_ranks():
            assert compiletime.key_components(items) == _components_as_before(items)


def _record(meta: dict, payload: bytes | None, md5: str | None = None) -> bytes:
    if payload is not None:
        meta = {**meta, "has_payload": md5 or hashlib.md5(payload).hexdigest()}
    head = b"V1123 07:01:04.270000 5375 torch/_dynamo/utils.py:1] " + json.dumps(meta).encode()
    return head if payload is None else head + b"\n\t" + payload.replace(b"\n", b"\n\t")


CHROMIUM = {"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}
SPAN = json.dumps({"name": "dynamo", "ts": 1.5, "ph": "B", "args": {"compile_id": "0/0", "other": 1}}).encode()


@pytest.mark.parametrize("meta,payload", [
    (CHROMIUM, SPAN),
    (CHROMIUM, SPAN.replace(b"dynamo", b"dyn\xffamo")),  # not UTF-8: read as the text decoded with U+FFFD
    (CHROMIUM, b'"a string"'), (CHROMIUM, b"not json"), (CHROMIUM, b"[1, 2]"), (CHROMIUM, b'{"ph": "E"}\nmore'),
    ({**CHROMIUM, "chromium_event": {"ph": "i", "name": "kept"}}, b"not json"),  # already compact: kept as it is
    ({"frame_id": 1, "chromium_event": {}, "compiled_autograd_id": 2}, SPAN),
    ({**CHROMIUM, "attempt": "x"}, SPAN),  # a value of the wrong type: not understood
    ({**CHROMIUM, "attempt": [1]}, SPAN),
    ({"artifact": {"name": "chromium_event"}, "frame_id": 3}, SPAN),
])
def test_a_chromium_span_reads_as_from_record_reads_it(meta, payload):
    health, strings = tracelog.LogHealth(), {}
    got = tracelog._event(_record(meta, payload), False, strings, health)
    want_meta = json.loads(json.dumps(meta))
    try:
        want = ev_mod.from_record(want_meta, payload.decode("utf-8", errors="replace"))
    except (TypeError, ValueError):
        want = None
    assert (got is None) == (want is None) and health.lines_not_understood == (want is None)
    if want is not None:
        assert (got.name, got.frame_id, got.frame_compile_id, got.attempt, got.meta, got.payload, got.call,
                got.compiled_autograd_id) == (want.name, want.frame_id, want.frame_compile_id, want.attempt,
                                              want.meta, want.payload, want.call, want.compiled_autograd_id)
        # made without its __init__, it is the same object field for field, in the same order
        assert type(got) is ev_mod.Event and list(vars(got).items()) == list(vars(want).items()) and got == want
        assert got.compile_id == want.compile_id


SPAN_CASES = [b'{"ph": "B", "name": "n", "ts": 1795425321862670.2, "args": {"compile_id": "0/0", "fn_name": "f"}}',
              b'{"ph": null, "args": null}', b'{}', b'{"args": {"compile_id": null, "is_backward": false, "x": [1]}}',
              b'{"ph": "B", "ph": "E", "args": {"cache_state": "hit", "cache_state": "miss"}}', b'{"args": [1]}',
              b'[1]', b'"{}"', b'NaN', b'{"ts": 1e400}', b'{"name": "a\\ud800"}', b'{"ts": 123456789012345678901234567890}',
              b'{"name": "x"} y', b'\xff', b'{"args": {"time_saved_ms": 3}, "extra": {"deep": [1, 2, {"a": 1}]}}']


@pytest.mark.parametrize("data", SPAN_CASES)
def test_a_span_read_without_building_what_is_left_out_is_compact_span_of_json_loads(data):
    try:
        span = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        span = None
    expected = ev_mod.compact_span({}, None if isinstance(span, str) else span)
    got = tracelog._compact_span(data)
    if got is not None:  # None: the caller reads it the general way (json.loads' value, by compact_span)
        assert repr(got) == repr(expected) and [type(v) for v in got.values()] == [type(v) for v in expected.values()]
    # every span of a recorded log is read the fast way, to the same value
    if data == SPAN_CASES[0]:
        with gzip.open(RANK1) as fh:
            records = list(tracelog._records(fh, tracelog.LogHealth()))
        spans = [r[r.find(b"\n") + 2:].replace(b"\n\t", b"\n") for r, _ in records if b'{"chromium_event"' in r[:200]]
        assert len(spans) > 200
        assert all(repr(tracelog._compact_span(p)) == repr(ev_mod.compact_span({}, json.loads(p))) for p in spans)


_GLOG_HEAD = b"V1123 07:01:04.270000 5375 torch/_dynamo/output_graph.py:1624] "
DESCRIBE_CASES = [
    b'{"describe_tensor": {"id": 0, "size": [2, 3], "requires_grad": true}, "frame_id": 0, "frame_compile_id": 0}',
    b'{"describe_storage": {"id": 1, "describer_id": 4, "size": 24}, "frame_id": 0, "attempt": 0}',
    b'{"describe_source": {"describer_id": 4, "id": 0, "source": "L[\'x\']"}}',
    b'{"describe_tensor": {"id": 2}, "has_payload": "0123456789abcdef0123456789abcdef"}',  # a payload stated, none
    b'{"describe_tensor": {"id": 2}, "has_payload": 5}',  # has_payload of another type: none stated
    b'{"describe_tensor": {"id": 3, "size": [2, ',  # cut short: not understood
    b'{"describe_tensor": NaN}',  # json.loads reads it, msgspec does not: the general way decides
    b'{"describe_tensor": {}, "describe_tensor": {"id": 4}}',
    b'{"describe_tensors": {}}',  # another name: the general way
    b'{"describe_source": 1} trailing',
]


@pytest.mark.parametrize("data", DESCRIBE_CASES)
def test_a_describe_record_is_counted_as_the_general_way_counts_it(data, monkeypatch):
    """The three describe_* events (most records of a log) are not read; the fast way counts what the general way
    counts for them (a record, a payload stated and not logged, a line not understood) and gives no event."""
    def read(record):
        health = tracelog.LogHealth()
        return tracelog._event(record, False, {}, health), health

    got = read(_GLOG_HEAD + data)
    monkeypatch.setattr(tracelog, "_described", lambda data: None)  # the general way alone
    want = read(_GLOG_HEAD + data)
    assert got[0] == want[0] and got[1] == want[1]
    assert (got[0] is None) == (data != DESCRIBE_CASES[8])  # the ignored events give none
    if data == DESCRIBE_CASES[0]:
        assert got[1].records == 1
        # with a payload the record goes the general way: its md5 is checked
        payload = b"x = 1"
        record = _GLOG_HEAD + b'{"describe_tensor": {}, "has_payload": "0"}\n\t' + payload
        assert read(record)[1].payload_mismatches == 1
    if data == DESCRIBE_CASES[3]:
        assert got[1].truncated_payloads == 1
    if data == DESCRIBE_CASES[5]:
        assert got[1].lines_not_understood == 1 and got[1].records == 0


def test_every_record_of_a_recorded_log_counts_the_same_either_way(monkeypatch):
    health = tracelog.LogHealth()
    events = list(tracelog.iter_events(RANK1, health))
    monkeypatch.setattr(tracelog, "_described", lambda data: None)
    slow_health = tracelog.LogHealth()
    assert list(tracelog.iter_events(RANK1, slow_health)) == events and slow_health == health
    with gzip.open(RANK1) as fh:
        assert fh.read().count(b'] {"describe_') == 30  # the fast way was taken


def test_key_components_travel_once_by_their_digest(tmp_path):
    d = _rank_dir(tmp_path, 3)
    log = str(sorted(d.iterdir())[0])
    alone, _ = tracelog.log_report(log, as_rank=True)
    assert any(lookup.components for c in alone.compile_time.compiles for lookup in c.caches)
    worker = rankpool.RankReader(worker=True)  # a pool worker's
    with memo.across_ranks():
        first = worker.read((0, log))
        again = worker.read((2, log))
    named = first.parts[:-6]  # the components tuples, then the six parts
    assert named and all(data for _, data in named) and not any(data for _, data in again.parts)
    # the compile-time part carries each look-up's components as a digest: a fraction of its whole pickle
    assert len(first.parts[-2][1]) * 4 < len(pickle.dumps(alone.compile_time, protocol=pickle.HIGHEST_PROTOCOL))
    later = rankpool.read_rank((2, log))  # one process: each rank carries what it names
    assert [digest for digest, _ in later.parts] == [digest for digest, _ in first.parts]
    assert all(data for _, data in later.parts)
    merged = merge_ranks([later], str(d), (), {})  # read whole without any earlier rank
    assert merged.ranks[0].compile_time == alone.compile_time


def test_the_largest_logs_go_first_and_the_merge_does_not_depend_on_the_order(tmp_path):
    d = _rank_dir(tmp_path, 6)
    logs = sorted(d.iterdir())
    entries = [(r, str(p)) for r, p in enumerate(logs)]
    sizes = {r: p.stat().st_size for r, p in enumerate(logs)}
    strides = rankpool._strides(entries, 2, sizes)
    assert [[r for r, _ in s] for s in strides] == [sorted(range(i, 6, 2), key=lambda r: -sizes[r]) for i in (0, 1)]
    assert [[r for r, _ in s] for s in strides] != [[0, 2, 4], [1, 3, 5]]  # the sizes reordered them
    got = list(rankpool._map(entries, 2, sizes))
    assert sorted(e[0] for e in got) == list(range(6))
    reader = rankpool.RankReader()
    with memo.across_ranks():
        in_order = [reader.read(e) for e in entries]
    one = merge_ranks(in_order, str(d), (), {})
    shuffled = merge_ranks(in_order[::-1], str(d), (), {})
    assert serialize.to_dict(shuffled) == serialize.to_dict(one) and one.parse is not None
    assert serialize.to_dict(merge_ranks(got, str(d), (), {}), timings=False) == \
        serialize.to_dict(one, timings=False)


def test_a_rank_s_graphs_travel_once_by_digest(tmp_path, monkeypatch):
    d = _rank_dir(tmp_path, 3)
    log = str(sorted(d.iterdir())[0])
    alone, _ = tracelog.log_report(log, as_rank=True)
    reader = rankpool.RankReader()
    with memo.across_ranks():
        first = reader.read((0, log))
        again = reader.read((2, log))
    plain = len(pickle.dumps(alone.stages.aot_autograd, protocol=pickle.HIGHEST_PROTOCOL))
    # the AOTAutograd part names its graphs by digest (they travel first, each once): a fraction of its whole pickle
    assert len(again.parts[-5][1]) * 10 < plain and again.parts[-5][0] == first.parts[-5][0]
    merged = merge_ranks([first, again], str(d), (), {})
    one, two = (r.stages.dynamo.graphs[0].graph for r in merged.ranks)
    assert one is two and one == alone.stages.dynamo.graphs[0].graph


def test_a_payload_met_again_is_checked_and_decoded_once_and_its_own_md5_still_counts(tmp_path):
    with gzip.open(RANK0) as fh:
        data = fh.read()
    (tmp_path / "a.log").write_bytes(data)
    header = next(ln for ln in data.split(b"\n") if b'"dynamo_output_graph"' in ln and b'"has_payload"' in ln)
    md5 = re.search(rb'"has_payload": "([0-9a-f]{32})"', header)[1]
    (tmp_path / "b.log").write_bytes(data.replace(header, header.replace(md5, b"0" * 32)))
    with memo.across_ranks():
        a_events, a = tracelog.read_log(tmp_path / "a.log")
        b_events, b = tracelog.read_log(tmp_path / "b.log")
        again, _ = tracelog.read_log(tmp_path / "a.log")
    assert (a.payload_mismatches, b.payload_mismatches) == (0, 1)  # the same payload, another md5 stated
    graphs = [[e.payload for e in events if e.name == "dynamo_output_graph"] for events in (a_events, again)]
    assert graphs[0] and all(x is y for x, y in zip(*graphs))  # one text: parsers keeping results by it find it at once
    plain, alone = tracelog.read_log(tmp_path / "b.log")  # each log alone: checked and decoded as it comes
    assert alone.payload_mismatches == 1 and [e.payload for e in plain] == [e.payload for e in b_events]


def test_a_worker_reads_its_stride_then_takes_the_last_rank_of_the_longest_and_the_merge_is_the_same(tmp_path,
                                                                                                    monkeypatch):
    """Worker i reads the ranks whose number is i modulo the workers (ranks of one GPU in a torchrun job, with 16
    workers on 8 GPUs), then the last rank of a stride whose worker read ranks of its kind, or else of the stride
    with the most left, where enough are (_STEAL_FROM); every rank once."""
    import multiprocessing

    monkeypatch.setattr(rankpool, "_STEAL_FROM", 3)  # (8 in use: the same rule at the scale of 16 workers)
    entries = [(r, f"rank_{r}") for r in range(10)]
    strides = rankpool._strides(entries, 3, None)
    assert [[r for r, _ in s] for s in strides] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    schedule = rankpool._Schedule(multiprocessing.get_context(), strides)

    def take(i):
        entry = rankpool._next_rank(i, schedule)
        return None if entry is None else entry[0]

    assert [take(1) for _ in range(4)] == [1, 4, 7, 9]  # its own, then the longest stride's last (four left)
    assert [take(2) for _ in range(4)] == [2, 5, 8, 6]  # its own, then the last of the three left
    assert take(2) is None and take(1) is None  # two left to worker 0: not taken by a worker of another kind
    schedule.kinds[0] = schedule.kinds[2] = 7  # worker 2 last read ranks of worker 0's kind: it takes one still
    assert take(2) == 3 and take(1) is None
    assert take(0) == 0 and take(0) is None and schedule.begun.value == 10
    # the kind of a rank's entry: its shared values' digests, whatever their order and whether sent before
    one = RankEntry(0, None, ((b"a" * 16, b"x"), (b"b" * 16, b""), *[(b"p", b"")] * 6), (), None)
    two = RankEntry(1, None, ((b"b" * 16, b"y"), (b"a" * 16, b""), *[(b"q", b"q")] * 6), (), None)
    assert rankpool._kind_of(one) == rankpool._kind_of(two) != 0
    assert rankpool._kind_of(RankEntry(2, None, ((b"p", b""),) * 6, (), None)) == 0
    d = _rank_dir(tmp_path, 9)
    one = rankpool.read(d, jobs=1)
    two = rankpool.read(d, jobs=2)
    assert serialize.to_dict(two, timings=False) == serialize.to_dict(one, timings=False)


def test_the_cycle_collector_is_off_while_reading_and_as_it_was_after(monkeypatch):
    """Reading a log or a directory runs without the cycle collector (its passes found nothing and took a quarter of
    the time), and leaves it as it found it: on, or off, also when the reading fails."""
    import gc

    seen: list[bool] = []
    real = rankpool.RankReader.read
    monkeypatch.setattr(rankpool.RankReader, "read",
                        lambda self, args: (seen.append(gc.isenabled()), real(self, args))[1])
    was = gc.isenabled()
    try:
        for start in (True, False):
            gc.enable() if start else gc.disable()
            rep = rankpool.read(DDP, jobs=1)
            assert len(rep.ranks) == 2 and gc.isenabled() is start
            with pytest.raises(TraceLogError):  # a reading that fails: the collector comes back all the same
                rankpool.read(DDP / "no such file.log")
            assert gc.isenabled() is start
    finally:
        gc.enable() if was else gc.disable()
    assert seen == [False] * 4  # both ranks, both times: read with the collector off
