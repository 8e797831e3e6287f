"""CUDA graphs under reduce-overhead, read from events recorded on an H100 (torch 2.11) and checked against torch's
own record of the same run (tests/data/cudagraphs/*.truth.json, written by tests/data/record_cudagraphs.py).
Torch-free: only the parse, render and serialise layers run here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from tcinspect import serialize
from tcinspect.analysis import checks
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
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - a throw-away sink
    console.print(render_cudagraphs(rep))
    return console.export_text()


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
    return [f.message for f in checks.check_limits("m.py", rep, checks.Limits(**limits)) if f.status == "fail"]


def test_check_budgets_name_torchs_reason():
    rep, _, _ = _report("mutated_input")
    failed = _failed(rep, cudagraph_skips=0)
    assert failed == ["cudagraph_skips 1 > max 0; 0/0 forward skipped: mutated inputs (1 instances)"]
    assert _failed(rep, cudagraph_skips=1, cudagraph_recordings=2) == []
    assert _failed(rep, cudagraph_recordings=1) == ["cudagraph_recordings 2 > max 1; 0/0 forward skipped: "
                                                    "mutated inputs (1 instances)"]
    assert checks.Limits(cudagraph_skips=0).any()


def test_baseline_records_and_compares_cudagraph_counts():
    clean, _, _ = _report("dynamic_sizes")
    entry = checks.snapshot(clean)
    assert entry["cudagraph_skips"] == 0 and entry["cudagraph_recordings"] == 6
    skipped, _, _ = _report("mutated_input")
    found = {f.check: f for f in checks.compare("m.py", skipped, entry)}
    assert found["cudagraph_skips"].status == "fail" and "mutated inputs" in found["cudagraph_skips"].message
    assert found["cudagraph_recordings"].status == "improved"


def test_config_budget_is_read():
    limits = checks.parse_limits({"max_cudagraph_skips": 0}, "pyproject.toml")
    assert limits.cudagraph_skips == 0
    with pytest.raises(Exception, match="max_cudagraph_skips must be a whole number"):
        checks.parse_limits({"max_cudagraph_skips": -1}, "pyproject.toml")


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
    assert g.user_lines == ("/home/user/tcinspect/tests/cudagraph_cases.py:40",)
    assert rep.cudagraphs.skips == truth["cudagraph_skips"] == 1
