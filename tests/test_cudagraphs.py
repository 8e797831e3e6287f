"""CUDA graphs under reduce-overhead, read from events recorded on an H100 (torch 2.11) and checked against torch's
own record of the same run (tests/data/cudagraphs/*.truth.json, written by tests/data/record_cudagraphs.py).
Torch-free: only the parse, render and serialise layers run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import render_text
from tcinspect import serialize
from tcinspect.analysis.check import baseline
from tcinspect.analysis.check.judge import check_limits
from tcinspect.analysis.check.limits import Limits, parse_limits
from tcinspect.parse import cudagraphs
from tcinspect.parse.events import Event, read_jsonl
from tcinspect.parse.fromevents import report_from_events
from tcinspect.render.cudagraphs import cudagraphs as render_cudagraphs
from tcinspect.report import Options, Stages, Target

DATA = Path(__file__).parent / "data" / "cudagraphs"
CASES = sorted(p.name.split("-torch")[0] for p in DATA.glob("*.truth.json"))


def _report(name: str, device: str = "cuda", mode: str = "reduce-overhead", kind: str = "callable"):
    events = read_jsonl(next(DATA.glob(f"{name}-torch*.jsonl.gz")))
    truth = json.loads(next(DATA.glob(f"{name}-torch*.truth.json")).read_text())
    rep = report_from_events(events, target=Target(kind=kind), options=Options(mode=mode, device=device),
                             device=device, torch_version=truth["torch"])
    return rep, truth, events


def _text(rep) -> str:
    return render_text(render_cudagraphs(rep), 160)


def _case_line(text: str) -> int:
    """The line of tests/cudagraph_cases.py (where the recorded models are defined) whose code holds ``text``."""
    lines = (Path(__file__).parent / "cudagraph_cases.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_recorded_cases_present():
    assert {"mutated_input", "dynamic_sizes", "mlp_train_sizes", "gpt2_train"} <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_recordings_and_skips_equal_torchs_record(name):
    rep, truth, _ = _report(name)
    cg = rep.cudagraphs
    assert cg is not None
    by_compile: dict[str, int] = {}
    for g in cg.graphs:
        by_compile[g.compile_id] = by_compile.get(g.compile_id, 0) + len(g.recordings)
    assert {k: v for k, v in by_compile.items() if v} == truth["recordings_by_compile_id"]
    assert cg.skips == truth["cudagraph_skips"] == len(truth["skip_messages"])
    for message in truth["skip_messages"]:
        head = message.split(". Found from")[0].replace("skipping cudagraphs due to ", "")
        assert any(head == g.reason for g in cg.graphs)


def test_mutated_input_forward_skipped_backward_recorded():
    rep, _, _ = _report("mutated_input")
    status = {(g.compile_id, g.part): (g.status, g.reason) for g in rep.cudagraphs.graphs}
    assert status[("0/0", "forward")] == ("skipped", "mutated inputs (1 instances)")
    assert status[("0/0", "backward")][0] == "recorded"
    text = _text(rep)
    assert "mutated inputs (1 instances)" in text and "skipped" in text


def test_dynamic_sizes_are_re_recordings_on_the_calls_that_brought_them():
    rep, _, _ = _report("dynamic_sizes")
    forward = next(g for g in rep.cudagraphs.graphs if g.part == "forward")
    # sizes 8, 16, 32 each recorded once (the second of its three calls), the last 8 replayed
    assert [r.call for r in forward.recordings] == [0, 1, 2]
    assert forward.rerecordings == 2 and all(r.record_time_s > 0 for r in forward.recordings)
    assert forward.cudagraphify_time_s > 0


def test_cpu_run_says_cuda_graphs_do_not_apply():
    rep, _, _ = _report("dynamic_sizes", device="cpu")
    on_cpu = rep.replace(cudagraphs=cudagraphs.build([], rep.options, Stages(), "cpu"))
    assert on_cpu.cudagraphs is not None and not on_cpu.cudagraphs.graphs
    assert "CUDA graphs capture CUDA work only, and this run's graphs ran on cpu" in _text(on_cpu)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_no_timings_leaves_out_the_recording_times(fmt):
    rep, _, _ = _report("dynamic_sizes")
    loaded = serialize.loads(serialize.dumps(rep, fmt, timings=False))
    forward = next(g for g in loaded.cudagraphs.graphs if g.part == "forward")
    assert [r.call for r in forward.recordings] == [0, 1, 2]
    assert forward.cudagraphify_time_s == 0 and all(r.record_time_s == 0 for r in forward.recordings)


def test_log_source_says_what_it_cannot_hold():
    rep, _, _ = _report("mutated_input", kind="torch_trace")
    assert cudagraphs.LOG_NOTE in rep.cudagraphs.notes


def test_off_without_a_cudagraph_mode_or_record():
    rep, _, _ = _report("dynamic_sizes", mode="")
    # the recording spans say CUDA graphs ran, whatever the options say
    assert rep.cudagraphs is not None and rep.cudagraphs.recordings == 3 + 3
    assert cudagraphs.build([], Options(), rep.stages, "cuda") is None


def test_malformed_skip_record_is_counted_not_raised():
    rep, _, events = _report("mutated_input")
    bad = Event(name=cudagraphs.SKIP_ARTIFACT, frame_id=0, frame_compile_id=0, payload="{not json")
    rep2 = report_from_events([*events, bad], target=Target(kind="callable"), options=rep.options, device="cuda",
                              torch_version=rep.torch_version)
    assert rep2.parse is not None
    assert {e.name: e.count for e in rep2.parse.artifacts_not_understood}[cudagraphs.SKIP_ARTIFACT] == 1
    assert rep2.cudagraphs == rep.cudagraphs


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_section_round_trips(fmt):
    rep, _, _ = _report("mlp_train_sizes")
    text = serialize.dumps(rep, fmt)
    assert serialize.loads(text).cudagraphs == rep.cudagraphs


def _failed(rep, **limits):
    return [f.message for f in check_limits("m.py", rep, Limits(**limits)) if f.status == "fail"]


def test_check_budgets_name_torchs_reason():
    rep, _, _ = _report("mutated_input")
    failed = _failed(rep, cudagraph_skips=0)
    assert failed == ["cudagraph_skips 1 > max 0; 0/0 forward skipped: mutated inputs (1 instances)"]
    assert _failed(rep, cudagraph_skips=1, cudagraph_recordings=2) == []
    assert _failed(rep, cudagraph_recordings=1) == ["cudagraph_recordings 2 > max 1; 0/0 forward skipped: "
                                                    "mutated inputs (1 instances)"]
    assert Limits(cudagraph_skips=0).any()


def test_baseline_records_and_compares_cudagraph_counts():
    clean, _, _ = _report("dynamic_sizes")
    entry = baseline.snapshot(clean)
    assert entry["cudagraph_skips"] == 0 and entry["cudagraph_recordings"] == 6
    skipped, _, _ = _report("mutated_input")
    found = {f.check: f for f in baseline.compare("m.py", skipped, entry)}
    assert found["cudagraph_skips"].status == "fail" and "mutated inputs" in found["cudagraph_skips"].message
    assert found["cudagraph_recordings"].status == "improved"


def test_config_budget_is_read():
    limits = parse_limits({"max_cudagraph_skips": 0}, "pyproject.toml")
    assert limits.cudagraph_skips == 0
    with pytest.raises(Exception, match="max_cudagraph_skips must be a whole number"):
        parse_limits({"max_cudagraph_skips": -1}, "pyproject.toml")


def _with_step(rep, verdict="launch-bound"):
    from tcinspect.report import KernelBench, StepProfile

    step = StepProfile(steps=10, method="profiler", wall_us=100.0, gpu_busy_us=5.0, gpu_busy_pct=5.0, launches=20,
                       cpu_between_launches_us=40.0, in_graph_us=5.0, outside_us=0.0, outside_kernels=0,
                       verdict=verdict, evidence="idle", suggestion="reduce-overhead")
    return rep.replace(bench=KernelBench(device_name="H100", runs=10, method="events", step=step))


def test_bench_verdict_names_the_skipped_graphs():
    from tcinspect.render.bench import cudagraph_advice

    skipped, _, _ = _report("mutated_input")
    advice = cudagraph_advice(_with_step(skipped))
    assert advice.startswith("on, but torch ran 1 graph without them: 0/0 forward: mutated inputs (1 instances)")
    recorded, _, _ = _report("dynamic_sizes")
    assert cudagraph_advice(_with_step(recorded)).startswith("on: 6 recordings, every graph recorded")
    assert cudagraph_advice(_with_step(recorded, "GPU-bound")) == ""
    assert cudagraph_advice(skipped) == ""  # no --bench step


def test_cpu_op_in_the_graph_is_one_skip_with_the_users_line():
    rep, truth, _ = _report("cpu_tensor")
    (g,) = rep.cudagraphs.graphs  # one inference graph: torch's one skip, not a second "forward" entry
    assert (g.part, g.status, g.reason) == ("inference", "skipped", "cpu device (sum_1)")
    assert g.user_lines == (f"/home/user/tcinspect/tests/cudagraph_cases.py:{_case_line('torch.ones(8).sum()')}",)
    assert rep.cudagraphs.skips == truth["cudagraph_skips"] == 1


# Graph partitions (Inductor's graph_partition, torch's default): recorded on an H200 (torch 2.11) beside torch's own
# "cudagraphs" debug log of the same run (the scheduler's "Created N graph partitions" and "Partition i" lines, and
# cudagraph trees' "Recording function=partition_k" lines), read by an independent handler (tests/cudagraph_cases.py).
PARTITIONED_CASES = ("cpu_island", "only_cpu_partition", "dynamic_skip", "train_island", "dynamic_sizes",
                     "mlp_train_sizes", "gpt2_train", "mutated_input")


@pytest.mark.parametrize("name", PARTITIONED_CASES)
def test_partitions_equal_torchs_scheduler_log(name):
    from collections import Counter

    rep, truth, _ = _report(name)
    graphs = [g for g in rep.cudagraphs.graphs if g.partitions]
    assert all(g.partitions_from == "scheduler" for g in graphs)
    created = Counter(f"Created {len(g.partitions)} graph partitions: {sum(p.cudagraphable for p in g.partitions)} "
                      f"cudagraphable, {sum(not p.cudagraphable for p in g.partitions)} non-cudagraphable"
                      for g in graphs)
    assert created == Counter(truth["partitions_created"])
    lines = Counter(f"Partition {p.index}: {p.nodes} nodes, {'cudagraphable' if p.cudagraphable else 'non-cudagraphable'}"
                    for g in graphs for p in g.partitions)
    assert lines == Counter(line.split(", inputs=")[0] for line in truth["partition_lines"])
    # each recording of each partition, as cudagraph trees logged it
    recorded = Counter(f"{g.compile_id} {p.function}" for g in graphs for p in g.partitions for _ in p.recordings)
    assert recorded == Counter(truth["recorded_functions"])


@pytest.mark.parametrize("name", PARTITIONED_CASES)
def test_every_kernel_is_in_one_partition_as_the_output_code_places_it(name):
    from helpers import launched

    rep, _, _ = _report(name)
    outputs = {(o.compile_id, o.part): o for o in rep.stages.inductor.outputs}
    for g in rep.cudagraphs.graphs:
        if not g.partitions:
            continue
        out = outputs[(g.compile_id, g.part)]
        placed = sorted(i for p in g.partitions for i in p.kernel_indices)
        assert placed == list(range(len(out.kernels))) and g.kernels == len(out.kernels)
        # the oracle: launches in the partition functions (the code above class Runner), read with plain regexes
        in_functions = len(launched(out.wrapper.split("\nclass Runner", 1)[0]))
        assert sum(p.kernels for p in g.partitions if p.cudagraphable) == in_functions


def test_a_cpu_island_is_three_partitions_two_captured_and_the_island_at_its_line():
    rep, truth, _ = _report("cpu_island")
    (g,) = rep.cudagraphs.graphs
    assert truth["partitions_created"] == ["Created 3 graph partitions: 2 cudagraphable, 1 non-cudagraphable"]
    assert [(p.cudagraphable, p.function, len(p.recordings)) for p in g.partitions] == [
        (True, "partition_0", 1), (False, "", 0), (True, "partition_1", 1)]
    island = g.partitions[1]
    line = f"cudagraph_cases.py:{_case_line('c = (h.cpu() * 2).cuda()')}"
    assert island.reasons == ("cpu ops", "DeviceCopy ops") and island.user_lines[0].endswith(line)
    # two recordings are the two partitions, not a re-recording
    assert g.status == "recorded" and g.rerecordings == 0 and len(g.recordings) == 2
    text = _text(rep)
    assert "3 partitions / 2 captured" in text and "0 re-recordings" in text
    assert f"cpu ops, DeviceCopy ops at {line}" in text and "2 of 3 kernels in CUDA graphs (67%)" in text


def test_a_graph_with_no_cudagraphable_partition_is_a_skip_torch_never_logged():
    rep, truth, _ = _report("only_cpu_partition")
    (g,) = rep.cudagraphs.graphs
    assert truth["cudagraph_skips"] == 0 and truth["skip_messages"] == []  # torch says nothing (pytorch#193044)
    assert truth["partitions_created"] == ["Created 1 graph partitions: 0 cudagraphable, 1 non-cudagraphable"]
    assert g.status == "skipped" and g.reason == "nothing captured: no cudagraphable partition (cpu ops, DeviceCopy ops)"
    assert g.user_lines[0].endswith(f"cudagraph_cases.py:{_case_line('x.cpu().sin() * 3')}")
    assert rep.cudagraphs.skips == 0 and rep.cudagraphs.unlogged_skips == 1
    assert cudagraphs.SILENT_NOTE in rep.cudagraphs.notes
    assert _failed(rep, cudagraph_skips=0) == [
        "cudagraph_skips 1 > max 0; 0/0 inference skipped: nothing captured: no cudagraphable partition (cpu ops, "
        "DeviceCopy ops)"]


def test_dynamic_graphs_left_out_by_cudagraph_skip_dynamic_graphs_are_skips_with_torchs_reason():
    rep, truth, _ = _report("dynamic_skip")
    assert truth["config"] == {"triton.cudagraph_skip_dynamic_graphs": True} and truth["cudagraph_skips"] == 0
    assert {(g.part, g.status, g.reason) for g in rep.cudagraphs.graphs} == {
        (part, "skipped", "nothing captured: no cudagraphable partition (dynamic shape ops)")
        for part in ("forward", "backward")}
    assert rep.cudagraphs.kernels_in_cudagraphs == 0 and rep.cudagraphs.unlogged_skips == 2


def test_a_training_step_partitions_forward_and_backward_and_unpartitioned_it_is_torchs_skip():
    rep, truth, _ = _report("train_island")
    parts = {g.part: g for g in rep.cudagraphs.graphs}
    assert set(parts) == {"forward", "backward"} and all(g.status == "recorded" for g in parts.values())
    assert all([p.cudagraphable for p in g.partitions] == [True, False, True] for g in parts.values())
    assert rep.cudagraphs.recordings == sum(truth["recordings_by_compile_id"].values()) == 4
    assert rep.cudagraphs.rerecordings == 0
    off, truth_off, _ = _report("train_island_unpartitioned")
    assert truth_off["config"] == {"graph_partition": False}
    forward = next(g for g in off.cudagraphs.graphs if g.part == "forward")
    assert forward.partitions == () and forward.status == "skipped" and forward.reason == "cpu device (device_put)"
    assert off.cudagraphs.skips == truth_off["cudagraph_skips"] == 1 and off.cudagraphs.unlogged_skips == 0


def test_a_new_size_records_the_same_partition_again_with_torchs_cause():
    rep, _, _ = _report("dynamic_sizes")
    forward = next(g for g in rep.cudagraphs.graphs if g.part == "forward")
    (p,) = forward.partitions
    assert [r.cause for r in p.recordings] == ["", "new symint key", "new symint key"]
    assert [r.call for r in p.recordings] == [0, 1, 2] and forward.rerecordings == 2


def test_cudagraph_coverage_budget_names_the_island():
    rep, _, _ = _report("cpu_island")
    line = f"cudagraph_cases.py:{_case_line('c = (h.cpu() * 2).cuda()')}"
    assert _failed(rep, min_cudagraph_coverage=0.9) == [
        f"CUDA-graph coverage 67% of kernels (2 of 3) < min 90%; costliest eager island 0/0 forward partition 1: "
        f"cpu ops, DeviceCopy ops at {line}"]
    assert _failed(rep, min_cudagraph_coverage=0.5) == []
    assert parse_limits({"min_cudagraph_coverage": 0.8}, "pyproject.toml").min_cudagraph_coverage == 0.8
    with pytest.raises(Exception, match="min_cudagraph_coverage must be a share from 0 to 1"):
        parse_limits({"min_cudagraph_coverage": 2}, "pyproject.toml")
    off, _, _ = _report("dynamic_sizes", device="cpu", mode="")
    assert _failed(off.replace(cudagraphs=None), min_cudagraph_coverage=0.9) == []


def test_findings_name_the_worst_island_and_the_page_shows_the_partitions():
    from tcinspect.analysis.findings import findings
    from tcinspect.render.html import render

    rep, _, _ = _report("cpu_island")
    (f,) = [f for f in findings(rep) if f.kind == "cudagraph_skip"]
    assert f.what == "an eager island splits 0/0 forward: partition 1 runs outside CUDA graphs"
    assert f.torch_says == "cpu ops, DeviceCopy ops" and f.where == f"cudagraph_cases.py:{_case_line('h.cpu() * 2')}"
    page = render(rep)
    assert "<h3>Graph partitions</h3>" in page and "eager island" in page and "3 partitions / 2 captured" in page


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_partitions_round_trip(fmt):
    rep, _, _ = _report("train_island")
    assert serialize.loads(serialize.dumps(rep, fmt)).cudagraphs == rep.cudagraphs


def test_a_log_has_the_partitions_of_the_output_code_and_says_what_it_lacks():
    rep, truth, events = _report("cpu_island")
    # a TORCH_TRACE log: torch's records alone, none of tcinspect's
    log = [e for e in events if e.name not in (cudagraphs.PARTITIONS_ARTIFACT, cudagraphs.RECORDING_ARTIFACT)]
    from_log = report_from_events(log, target=Target(kind="torch_trace"), options=rep.options, device="cuda",
                                  torch_version=truth["torch"])
    (g,) = from_log.cudagraphs.graphs
    assert g.partitions_from == "output code" and cudagraphs.OUTPUT_CODE_NOTE in from_log.cudagraphs.notes
    assert [(p.cudagraphable, p.function, p.kernels) for p in g.partitions] == [
        (True, "partition_0", 1), (False, "", 1), (True, "partition_1", 1)]
    assert g.rerecordings == 0 and g.kernels_in_cudagraphs == 2  # two recordings spans, two cudagraphable partitions


def test_measured_gpu_time_splits_by_partition():
    """With codegen --bench, the share of GPU time inside CUDA graphs adds the kernels' times by the partition each
    kernel is in (KernelTiming.index is its place in the output code, CudaGraphPartition.kernel_indices too)."""
    from tcinspect.analysis.cudagraphs import islands, time_share
    from tcinspect.report import KernelBench, KernelTiming

    rep, _, _ = _report("cpu_island")
    (g,) = rep.cudagraphs.graphs
    times = {i: 10.0 * (i + 1) for i in range(g.kernels)}  # 10, 20, 30 us
    bench = KernelBench(device_name="H200", runs=5, method="events", kernels=tuple(
        KernelTiming(compile_id=g.compile_id, part=g.part, index=i, name=f"k{i}", kind="triton", median_us=t, runs=5)
        for i, t in times.items()))
    timed = rep.replace(bench=bench)
    inside = sum(times[i] for p in g.partitions if p.cudagraphable for i in p.kernel_indices)
    assert time_share(timed) == (inside, sum(times.values()))
    (island,) = islands(timed)
    assert island.time_us == sum(times[i] for i in g.partitions[1].kernel_indices)
    assert "us of measured GPU time" in _text(timed)


@pytest.mark.torch
def test_the_capture_keeps_torchs_partition_log_beside_the_output_code_and_finds_it_on_a_cache_hit(tmp_path,
                                                                                                    monkeypatch):
    """The scheduler's debug records, as torch logs them (its format strings and arguments), become the record of the
    output code logged next; a second run whose cache hit schedules nothing finds that record by the same code."""
    import logging

    from tcinspect.capturing import records
    from tcinspect.capturing._compat.cudagraphs import PARTITION_LOGGER, cudagraph_partition_log
    from tcinspect.capturing.recorder import Recorder
    from tcinspect.parse import events as ev_mod

    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path))
    records.forget_in_process()
    _, _, events = _report("cpu_island")
    output = next(e for e in events if e.name == "inductor_output_code")

    def logged(name: str, level: int, msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord(name, level, "scheduler.py", 1, msg, args, None)

    first = Recorder()
    seen: list[dict] = []
    with cudagraph_partition_log(seen.append) as log:
        first.partition_log = log
        sched = logging.getLogger(PARTITION_LOGGER)
        for rec in (logged(sched.name, logging.DEBUG, "Created %d graph partitions: %d cudagraphable, %d non-cudagraphable",
                           3, 2, 1),
                    logged(sched.name, logging.DEBUG, "  Partition %d: %d nodes, %s, inputs=%d, outputs=%d",
                           0, 1, "cudagraphable", 3, 2),
                    logged(sched.name, logging.DEBUG, "  Partition %d: %d nodes, %s, inputs=%d, outputs=%d",
                           1, 3, "non-cudagraphable", 1, 1),
                    logged(sched.name, logging.DEBUG, "    %s: %s", "op1",
                           "reason=cpu ops, ir=DeviceCopy, fx=prims.device_put.default(addmm, cpu)"),
                    logged(sched.name, logging.DEBUG, "         %s", 'File "/m.py", line 7, in forward'),
                    logged(sched.name, logging.DEBUG, "  Partition %d: %d nodes, %s, inputs=%d, outputs=%d",
                           2, 1, "cudagraphable", 3, 3)):
            sched.handle(rec)
        first._partitions(output)
    kept = [e for e in first.events if e.name == ev_mod.CUDAGRAPH_PARTITIONS_ARTIFACT]
    assert len(kept) == 1
    import json

    record = json.loads(kept[0].payload)
    assert [p["cudagraphable"] for p in record["partitions"]] == [True, False, True]
    assert record["partitions"][1]["ops"] == [{"node": "op1", "reason": "cpu ops", "ir": "DeviceCopy",
                                               "fx": "prims.device_put.default(addmm, cpu)",
                                               "stack": ['File "/m.py", line 7, in forward']}]
    # the loggers' levels are restored, and the debug records reached no handler of the user's
    assert logging.getLogger(PARTITION_LOGGER).level == logging.NOTSET
    records.forget_in_process()  # a new process: only the disk record remains
    second = Recorder()
    with cudagraph_partition_log(seen.append) as log:
        second.partition_log = log
        second._partitions(output)  # nothing scheduled: an FX graph cache hit
    again = [e for e in second.events if e.name == ev_mod.CUDAGRAPH_PARTITIONS_ARTIFACT]
    assert len(again) == 1 and json.loads(again[0].payload)["partitions"] == record["partitions"]
