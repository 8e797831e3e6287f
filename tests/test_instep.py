"""In-step kernel times: torch.profiler's trace matched to the kernel catalog.

CPU: the matching on profiler traces recorded on an H100 (tests/data/instep-*.json.gz, written by the
GPU test below with TCINSPECT_RECORD_DIR set) and the verdict arithmetic. GPU: in-step times against
an independent torch.profiler run of the same compiled step.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from tcinspect.parse import instep

pytestmark = pytest.mark.torch  # torch is imported below, at the module's top level, for its GPU tests
DATA = Path(__file__).resolve().parent / "data"
RECORDED = sorted(DATA.glob("instep-*.json.gz"))
_KEEP = ("kernel", "gpu_memset", "gpu_memcpy", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation")


def _load(path: Path) -> tuple[dict, list[instep.Entry]]:
    with gzip.open(path, "rt") as fh:
        data = json.load(fh)
    return data["trace"], [instep.Entry(k, n) for k, n in data["entries"]]


@pytest.mark.parametrize("path", RECORDED, ids=[p.name.split(".json")[0] for p in RECORDED])
def test_recorded_profile_matches_every_triton_launch_in_every_step(path):
    trace, entries = _load(path)
    m = instep.match(trace, entries)
    assert len(m.steps) >= 3
    kernels_in_trace = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    for i, e in enumerate(entries):
        if e.kind == "triton":
            assert len(m.per_entry_us[i]) == len(m.steps), f"{e.name} unmatched in some step"
            assert m.per_entry_kernels[i] == 1
    for s in m.steps:
        # each matched time is exactly one of the trace's GPU kernel events
        for k in s.kernels:
            if k.entry >= 0 and entries[k.entry].kind == "triton":
                assert instep._triton_match(k.name, entries[k.entry].name)
        assert sum(1 for k in s.kernels if k.entry >= 0) >= sum(1 for e in entries if e.kind == "triton")
    assert sum(len(s.kernels) for s in m.steps) <= len(kernels_in_trace)
    externs = [i for i, e in enumerate(entries) if e.kind == "extern"]
    assert all(m.per_entry_us[i] for i in externs), [entries[i].name for i in externs if not m.per_entry_us[i]]


def _ev(cat, name, ts, dur, corr=None):
    e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}
    if corr is not None:
        e["args"] = {"correlation": corr}
    return e


def _synthetic(gpu_durations, launch_every, gap_at=None, gap=0.0):
    """One step: kernels k0.. launched every `launch_every` µs on the CPU, each running its duration on the GPU."""
    events = [_ev("user_annotation", "tcinspect_step_0", 0, 10_000)]
    gpu_t = 5.0
    for i, d in enumerate(gpu_durations):
        cpu_t = 1 + i * launch_every + (gap if gap_at is not None and i >= gap_at else 0)
        events.append(_ev("cuda_runtime", "cudaLaunchKernel", cpu_t, 2, corr=i))
        start = max(gpu_t, cpu_t + 4)
        events.append(_ev("kernel", f"triton_poi_fused_{i}", start, d, corr=i))
        gpu_t = start + d
    return {"traceEvents": events}, [instep.Entry("triton", f"triton_poi_fused_{i}") for i in range(len(gpu_durations))]


def test_verdicts_from_the_step_numbers():
    # long kernels launched quickly: the GPU never waits
    trace, entries = _synthetic([500.0] * 10, launch_every=10)
    m = instep.match(trace, entries)
    st = instep.step_stats(m.steps[0], [instep.Where("0/0 forward", e.name) for e in entries])
    st_end = trace["traceEvents"][0]["ts"] + max(k.start + k.dur for k in m.steps[0].kernels)
    busy_pct = 100 * st.busy_us / st_end
    assert instep.verdict(busy_pct, 0, 0, st.launches, st.cpu_between_launches_us)[0] == "GPU-bound"
    # tiny kernels, 20 µs of CPU per launch: idle in small gaps
    trace, entries = _synthetic([2.0] * 50, launch_every=20)
    m = instep.match(trace, entries)
    st = instep.step_stats(m.steps[0], [instep.Where("0/0 forward", e.name) for e in entries])
    idle = sum(g for g, _, _ in st.gaps)
    v = instep.verdict(100 * st.busy_us / (st.busy_us + idle), idle, 0.0, st.launches, st.cpu_between_launches_us)
    assert v[0] == "launch-bound" and "reduce-overhead" in v[2]
    assert st.cpu_between_launches_us == pytest.approx(20.0)
    # one long CPU stall at a graph boundary
    trace, entries = _synthetic([5.0] * 10, launch_every=6, gap_at=5, gap=2000.0)
    m = instep.match(trace, entries)
    where = [instep.Where("0/0 forward" if i < 5 else "1/0 forward", e.name) for i, e in enumerate(entries)]
    st = instep.step_stats(m.steps[0], where)
    g, before, after = st.gaps[0]
    assert g > 1900 and before.graph != after.graph
    boundary = sum(x for x, a, b in st.gaps if a.graph != b.graph)
    idle = sum(x for x, _, _ in st.gaps)
    assert instep.verdict(10.0, idle, boundary, st.launches, st.cpu_between_launches_us)[0] == "CPU-bound between graphs"


def test_extern_launch_takes_every_kernel_inside_its_aten_op():
    events = [_ev("user_annotation", "tcinspect_step_0", 0, 1000),
              _ev("cpu_op", "aten::mm", 10, 30),
              _ev("cuda_runtime", "cudaLaunchKernel", 12, 2, corr=1), _ev("kernel", "sm90_gemm_a", 50, 40, corr=1),
              _ev("cuda_runtime", "cudaLaunchKernel", 20, 2, corr=2), _ev("kernel", "splitk_reduce", 90, 5, corr=2),
              _ev("cuda_runtime", "cudaLaunchKernel", 45, 2, corr=3), _ev("kernel", "triton_poi_fused_add_0", 95, 7, corr=3)]
    m = instep.match({"traceEvents": events}, [instep.Entry("extern", "mm"), instep.Entry("triton", "triton_poi_fused_add_0")])
    assert m.per_entry_us == [[45.0], [7.0]] and m.per_entry_kernels == [2, 1]


# ----------------------------------------------------------------------------- on a GPU

torch = pytest.importorskip("torch")
GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _profiled_kernel_times(fn, steps=10):
    """Independent of tcinspect: per GPU kernel name, and per aten op (the GPU time of the kernels it
    launched), the time per step, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    per_name: dict[str, float] = defaultdict(float)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per_name[e.name] += e.device_time / steps
    per_op = {a.key: a.device_time_total / steps for a in prof.key_averages() if a.key.startswith("aten::")}
    return per_name, per_op


def _model(name):
    import sys
    sys.path.insert(0, str(DATA))
    from record_provenance import build

    return build(name, "cuda")


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("name", ["block", "llama"])
def test_in_step_times_agree_with_the_profiler(name, monkeypatch):
    from tcinspect.capturing import engine
    from tcinspect.parse import roofline
    from tcinspect.report import BenchRequest, CompileOptions

    model, inputs, _ = _model(name)
    seen = {}
    real_attach = roofline.attach

    def keep(rep, measured):
        seen["m"] = measured
        return real_attach(rep, measured)

    monkeypatch.setattr(roofline, "attach", keep)
    rep = engine.capture(model, *inputs, compile=CompileOptions(device="cuda"), bench=BenchRequest(runs=20), quiet=True)
    assert rep.ok, rep.error
    b = rep.bench
    assert b is not None and b.step is not None
    st = b.step
    print(f"{name}: step {st.wall_us:.0f} µs wall, busy {st.gpu_busy_pct:.0f}%, {st.launches} kernels, verdict "
          f"{st.verdict} ({st.evidence}); in-graph {st.in_graph_us:.0f} µs + outside {st.outside_us:.0f} µs")

    out_dir = os.environ.get("TCINSPECT_RECORD_DIR")
    if out_dir:
        m = seen["m"]
        events = [e for e in m.profile["traceEvents"] if e.get("cat") in _KEEP
                  and (e.get("cat") != "user_annotation" or str(e.get("name", "")).startswith(instep.STEP_MARK))]
        marks = sorted(e["ts"] for e in events if str(e.get("name", "")).startswith(instep.STEP_MARK))
        cut = marks[3] if len(marks) > 3 else float("inf")  # three steps are enough for the CPU test
        events = [e for e in events if float(e.get("ts", 0)) < cut]
        with gzip.open(Path(out_dir) / f"instep-{name}-torch{torch.__version__.split('+')[0]}.json.gz", "wt") as fh:
            json.dump({"entries": [["extern" if x.kind == "extern" else "triton", x.name] for x in m.launches],
                       "trace": {"traceEvents": events}}, fh)

    # the same compiled step, profiled independently (the FX graph cache gives the same kernels)
    compiled = torch.compile(model)

    def one_step():
        out = compiled(*inputs)
        out.sum().backward() if out.requires_grad else None

    per_name, per_op = _profiled_kernel_times(one_step)
    ours: dict[str, float] = defaultdict(float)
    for k in b.kernels:
        if k.kind != "extern" and k.in_step_us > 0:
            ours[k.name] += k.in_step_us
    checked = 0
    for kname, us in ours.items():
        ref = per_name.get(kname) or next((v for n, v in per_name.items() if instep._triton_match(n, kname)), None)
        assert ref is not None, f"{kname} not in the profiler's kernels"
        if ref >= 20.0:
            assert abs(us - ref) <= 0.10 * ref, (kname, us, ref)
            checked += 1
    # extern kernels (cuBLAS, attention) by the aten op they run as: ours summed per op vs the profiler's op
    by_op: dict[str, float] = defaultdict(float)
    for k in b.kernels:
        if k.kind == "extern" and k.in_step_us > 0:
            by_op[instep._extern_op(k.name)] += k.in_step_us
    for op, us in by_op.items():
        ref = per_op.get(op)
        assert ref is not None, f"{op} not among the profiler's ops"
        if ref >= 20.0:
            assert abs(us - ref) <= 0.10 * ref, (op, us, ref)
            checked += 1
    print(f"{name}: extern ops " + ", ".join(f"{op} {us:.1f} vs {per_op.get(op, 0):.1f}" for op, us in by_op.items()))
    total_ref = sum(per_name.values())
    total = st.in_graph_us + st.outside_us
    matched = sum(t.in_step_us for t in b.kernels)
    print(f"{name}: catalog kernels {matched:.1f} µs in step; profiler top: "
          + ", ".join(f"{n[:40]} {v:.1f}" for n, v in sorted(per_name.items(), key=lambda kv: -kv[1])[:8]))
    assert checked, "no kernel or op of 20 µs or more to compare"
    print(f"{name}: {checked} kernels/ops >= 20 µs within 10%; total {total:.1f} µs vs profiler {total_ref:.1f} µs")
    assert abs(total - total_ref) <= 0.05 * total_ref, (total, total_ref)


@pytest.mark.parametrize("args, needle", [
    (["--try-mode", "reduce-overhead"], "add --bench"),
    (["--bench", "--try-mode", "fast"], "not a torch.compile mode"),
    (["--bench", "--sort", "fastest"], "pass --sort step, time, peak or launch"),
])
def test_bench_options_bad_input(args, needle):
    from helpers import SAMPLES, run_cli

    r = run_cli("codegen", str(SAMPLES / "tiny.py"), *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


@pytest.mark.gpu
@GPU
def test_try_mode_times_the_other_mode_beside_the_default():
    from tcinspect.capturing import engine
    from tcinspect.report import BenchRequest, CompileOptions

    model, inputs, _ = _model("block")
    rep = engine.capture(model, *inputs, compile=CompileOptions(device="cuda"),
                         bench=BenchRequest(runs=5, try_mode="reduce-overhead"), quiet=True)
    whats = [e.what for e in rep.bench.end_to_end]
    print("end to end:", [(e.what, e.compiled_ms) for e in rep.bench.end_to_end], rep.bench.notes)
    assert "forward, mode=reduce-overhead" in whats and "forward+backward, mode=reduce-overhead" in whats
    # the other mode's compile ran after the recording: the report holds the default compile only
    assert {o.compile_id for o in rep.stages.inductor.outputs} == {"0/0"}
