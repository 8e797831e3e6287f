"""`codegen --bench` without a GPU: the arithmetic, matching launches to kernels, the renderer, the
YAML/JSON round trip, and the one-line refusals (the timing itself is tested in test_gpu.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from builders.reports import make_report
from helpers import SAMPLES, cli, cuda_available  # noqa: F401  (cuda_available: named in a skipif)
from tcinspect import cache, serialize
from tcinspect.analysis.bench import bench_rows
from tcinspect.capturing import datasheets, gpu_timing
from tcinspect.parse import kernelmath, roofline
from tcinspect.parse.measured import Arg, Launch, Measured
from tcinspect.render import bench as render
from tcinspect.render.bench import bench_document
from tcinspect.report import (
    CompileOptions,
    EndToEnd,
    InductorStage,
    Kernel,
    KernelBench,
    Options,
    OutputCode,
    Peak,
    Report,
    Stages,
    Target,
)

RELU_SOURCE = """@triton.jit
def relu_kernel(input_ptr, output_ptr, num_elem, block_size: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * block_size + tl.arange(0, block_size)
    mask = offs < num_elem
    x = tl.load(input_ptr + offs, mask=mask)
    tl.store(output_ptr + offs, tl.maximum(x, 0), mask=mask)
"""


def t(name: str, shape, role: str = "", dtype: str = "f32", stride=None, itemsize: int = 4) -> Arg:
    if stride is None:
        stride, step = [], 1
        for s in reversed(shape):
            stride.insert(0, step)
            step *= s
    return Arg(name, role, tuple(shape), tuple(stride), itemsize, dtype)


# ----------------------------------------------------------------------------- bytes and FLOPs


def test_tensor_bytes_counts_a_broadcast_dimension_once():
    assert kernelmath.tensor_bytes((64, 32), (32, 1), 4) == 64 * 32 * 4
    assert kernelmath.tensor_bytes((64, 32), (0, 1), 4) == 32 * 4  # a bias expanded over 64 rows
    assert kernelmath.tensor_bytes((8, 0), (1, 1), 2) == 0


def test_traffic_counts_in_out_both_ways_and_scratch_not_at_all():
    args = kernelmath.resolve_roles("triton", [t("in_ptr0", (1024,)), t("in_out_ptr0", (256,)), t("out_ptr0", (128,), dtype="b8",
                                                                                        itemsize=1),
                                       t("ws_ptr", (4096,))])
    assert [a.role for a in args] == ["read", "readwrite", "write", "scratch"]
    assert kernelmath.traffic(args) == (1024 * 4 + 256 * 4, 256 * 4 + 128)


def test_user_kernel_roles_come_from_what_its_source_stores_through():
    assert {"output_ptr", "offs", "pid", "block_size"} <= kernelmath.stored_names(RELU_SOURCE)
    assert "input_ptr" not in kernelmath.stored_names(RELU_SOURCE)
    args = kernelmath.resolve_roles("triton", [t("input_ptr", (4, 6, 28, 28)), t("output_ptr", (4, 6, 28, 28))], RELU_SOURCE)
    assert [a.role for a in args] == ["read", "write"]
    # a pointer computed first, then stored through
    src = "p = y_ptr + offs\ntl.store(p, x)\n"
    assert "y_ptr" in kernelmath.stored_names(src)


def test_roles_stated_by_torch_win():
    args = kernelmath.resolve_roles("extern", [t("0", (8, 4)), t("1", (4, 2)), t("out", (8, 2), role="write")])
    assert [a.role for a in args] == ["read", "read", "write"]


def test_matmul_flops():
    a, b, out = t("0", (256, 128), "read"), t("1", (128, 64), "read"), t("out", (256, 64), "write")
    assert kernelmath.flops_of("extern", "mm", [a, b, out], {}) == (2 * 256 * 128 * 64, "f32")
    assert kernelmath.flops_of("extern", "mm", [a, b, out], {}, tf32=(True, True)) == (2 * 256 * 128 * 64, "tf32")
    bias = t("0", (64,), "read")
    a1, b2 = t("1", (256, 128), "read"), t("2", (128, 64), "read")
    assert kernelmath.flops_of("extern", "addmm", [bias, a1, b2, out], {"alpha": 1, "beta": 1})[0] == 2 * 256 * 128 * 64
    x, y = t("0", (12, 64, 32), "read", "bf16", itemsize=2), t("1", (12, 32, 16), "read", "bf16", itemsize=2)
    assert kernelmath.flops_of("extern", "aten.bmm.default", [x, y], {}) == (2 * 12 * 64 * 32 * 16, "bf16")
    # an Inductor mm template names its operands arg_A / arg_B
    ta, tb = t("arg_A", (512, 256), "read"), t("arg_B", (256, 128), "read")
    assert kernelmath.flops_of("triton", "triton_tem_fused_mm_0", [ta, tb, t("out_ptr0", (512, 128), "write")], {})[0] == \
        2 * 512 * 256 * 128
    assert kernelmath.flops_of("triton", "triton_poi_fused_relu_0", [t("in_ptr0", (8,), "read")], {}) == (0, "")


def test_convolution_flops_forward_transposed_and_backward():
    x, w = t("0", (4, 1, 28, 28), "read"), t("1", (6, 1, 5, 5), "read")
    out = t("return[0]", (4, 6, 28, 28), "write")
    per_output = 1 * 5 * 5
    assert kernelmath.flops_of("extern", "convolution", [x, w, out], {"transposed": False}, tf32=(False, True)) == \
        (2 * 4 * 6 * 28 * 28 * per_output, "tf32")
    # transposed: every input element meets Cout/groups × kernel weights
    wt = t("1", (6, 3, 2, 2), "read")
    assert kernelmath.flops_of("extern", "convolution", [t("0", (2, 6, 7, 7), "read"), wt, t("out", (2, 3, 14, 14), "write")],
                       {"transposed": True})[0] == 2 * (2 * 6 * 7 * 7) * (3 * 2 * 2)
    named = [t("grad_output", (4, 6, 28, 28), "read"), t("input", (4, 1, 28, 28), "read"), t("weight", (6, 1, 5, 5), "read")]
    fwd = 2 * 4 * 6 * 28 * 28 * per_output
    assert kernelmath.flops_of("extern", "aten.convolution_backward.default", named,
                       {"transposed": False, "output_mask": [True, True, False]})[0] == 2 * fwd
    assert kernelmath.flops_of("extern", "aten.convolution_backward.default", named,
                       {"transposed": False, "output_mask": [False, True, False]})[0] == fwd


def test_attention_flops():
    q, k, v = (t(n, (4, 4, 64, 16), "read") for n in ("query", "key", "value"))
    fwd = 2 * 16 * 64 * 64 * (16 + 16)
    name = "aten._scaled_dot_product_efficient_attention.default"
    assert kernelmath.flops_of("extern", name, [q, k, v], {"is_causal": False}) == (fwd, "f32")
    assert kernelmath.flops_of("extern", name, [q, k, v], {"is_causal": True})[0] == fwd // 2
    assert kernelmath.flops_of("extern", "aten._scaled_dot_product_efficient_attention_backward.default", [q, k, v],
                       {"is_causal": False})[0] == fwd * 5 // 2


def test_roofline_memory_compute_and_latency():
    # 300 MB in 100 µs = 3000 GB/s: memory-bound, 90% of a 3333 GB/s roof
    r = kernelmath.roofline(100.0, 300_000_000, 0, 3333.0, 3000.0, 0.0)
    assert r["gb_per_s"] == 3000.0 and r["bound"] == "memory"
    assert r["pct_of_bandwidth"] == pytest.approx(90.0, abs=0.1) and r["pct_of_copy"] == 100.0
    assert r["pct_of_roofline"] == r["pct_of_bandwidth"]
    # an 8192³ bf16 matmul (1.1 TFLOP, 400 MB) in 2 ms: past the ridge point, so compute-bound
    flops = 2 * 8192**3
    r = kernelmath.roofline(2000.0, 3 * 8192 * 8192 * 2, flops, 3350.0, 3000.0, 989.5)
    assert r["bound"] == "compute"
    assert r["tflop_per_s"] == pytest.approx(flops / 2e-3 / 1e12, rel=1e-3)
    assert r["pct_of_roofline"] == r["pct_of_compute"] == pytest.approx(100 * r["tflop_per_s"] / 989.5, abs=0.1)
    # 16 KiB cannot take 2 µs at 3 TB/s: bound by the fixed cost of a launch
    assert kernelmath.roofline(3.0, 16384, 0, 3350.0, 3000.0, 0.0)["bound"] == "latency"
    assert kernelmath.roofline(0.0, 16384, 0, 3350.0, 3000.0, 0.0)["gb_per_s"] == 0.0


def test_peaks_from_properties_and_the_datasheets():
    assert datasheets.theoretical_bandwidth(2_619_000, 5120) == pytest.approx(3352.3, abs=0.1)  # H100 SXM5
    assert datasheets.datasheet("NVIDIA H100 80GB HBM3").label == "H100 SXM"
    assert datasheets.datasheet("NVIDIA H100 PCIe").label == "H100 PCIe"
    assert datasheets.datasheet("NVIDIA H200").label == "H200 SXM"
    assert datasheets.datasheet("NVIDIA H200 NVL").label == "H200 NVL"
    assert datasheets.datasheet("NVIDIA H200").compute["bf16"] == 989.5
    assert datasheets.datasheet("NVIDIA A10G") is None


# ----------------------------------------------------------------------------- matching launches to kernels


def _kernel(name: str, kind: str = "triton_pointwise", language: str = "triton") -> Kernel:
    return Kernel(name=name, kind=kind, language=language, source=RELU_SOURCE if kind == "user_triton" else "")


def _report(bench: KernelBench | None = None) -> Report:
    fwd = OutputCode("0/0", "0_forward", "forward", "# AOT ID: ['0_forward']\nforward wrapper\n",
                     (_kernel("mm", "extern", ""), _kernel("triton_poi_fused_clone_0"), _kernel("relu_kernel_0", "user_triton"),
                      _kernel("triton_poi_fused_clone_0"), _kernel("cpp_fused_sum_1", "cpp", "cpp")))
    bwd = OutputCode("0/0", "0_backward", "backward", "# AOT ID: ['0_backward']\nbackward wrapper\n",
                     (_kernel("triton_per_fused_sum_0", "triton_persistent_reduction"),))
    other = OutputCode("1/0", "1_forward", "forward", "# AOT ID: ['1_forward']\n", (_kernel("triton_poi_fused_0"),))
    return make_report(torch_version="2.11.0+cu130", device="cuda", target=Target(kind="model", path="m.py"),
                       stages=Stages(inductor=InductorStage("ok", "", (fwd, bwd, other))), bench=bench)


def _launch(name: str, wrapper: str, frame: int, kind: str = "triton", us: float = 10.0, args=()) -> Launch:
    return Launch(kind, name, wrapper, frame, args=list(args) or [t("in_ptr0", (1024,)), t("out_ptr0", (1024,))],
                  times_ms=[us / 1e3] * 5)


def _measured(launches) -> Measured:
    return Measured(device_name="NVIDIA H100 80GB HBM3", runs=5, method="test", launches=launches,
                    wrappers={"/c/fw.py": "# AOT ID: ['0_forward']\nforward wrapper\n", "/c/bw.py": "changed text"},
                    peaks=[Peak("memory_bandwidth", 3352.3, "GB/s", "device properties"),
                           Peak("copy_bandwidth", 2900.0, "GB/s", "measured"),
                           Peak("compute", 494.5, "TFLOP/s", "datasheet", dtype="tf32")],
                    end_to_end=[EndToEnd("forward", 1.0, 0.5, 2.0, 5)], tf32=(True, True))


def test_launches_match_kernels_in_order_with_repeats_and_gaps():
    launches = [
        _launch("mm", "/c/fw.py", 1, "extern", 20.0, [t("0", (64, 32)), t("1", (32, 16)), t("out", (64, 16), "write")]),
        _launch("triton_poi_fused_clone_0", "/c/fw.py", 1),
        _launch("relu_kernel_0", "/c/fw.py", 1, args=[t("input_ptr", (1024,)), t("output_ptr", (1024,))]),
        _launch("triton_poi_fused_clone_0", "/c/fw.py", 1, us=30.0),
        _launch("triton_per_fused_sum_0", "/c/bw.py", 2, us=40.0),  # matched by kernel names: its text differs
        _launch("triton_mystery_9", "/c/elsewhere.py", 3),
    ]
    bench = roofline.summarize(_report(), _measured(launches))
    rows = [(k.compile_id, k.part, k.index, k.name) for k in bench.kernels]
    assert rows == [("0/0", "forward", 0, "mm"), ("0/0", "forward", 1, "triton_poi_fused_clone_0"),
                    ("0/0", "forward", 2, "relu_kernel_0"), ("0/0", "forward", 3, "triton_poi_fused_clone_0"),
                    ("0/0", "forward", 4, "cpp_fused_sum_1"), ("0/0", "backward", 0, "triton_per_fused_sum_0"),
                    ("", "", -1, "triton_mystery_9")]
    by = {(k.index, k.part): k for k in bench.kernels}
    assert by[(3, "forward")].median_us == 30.0 and by[(1, "forward")].median_us == 10.0
    assert by[(4, "forward")].median_us == 0 and "C++" in by[(4, "forward")].note
    mm = by[(0, "forward")]
    assert mm.flops == 2 * 64 * 32 * 16 and mm.dtype == "tf32"
    assert (mm.bytes_read, mm.bytes_written) == ((64 * 32 + 32 * 16) * 4, 64 * 16 * 4)
    relu = by[(2, "forward")]
    assert (relu.bytes_read, relu.bytes_written) == (4096, 4096)
    assert relu.gb_per_s == pytest.approx(8192 / 10e-6 / 1e9, rel=1e-3)
    assert sum(k.share for k in bench.kernels) == pytest.approx(100, abs=0.5)
    assert bench.total_us == pytest.approx(20 + 10 + 10 + 30 + 40 + 10)
    assert any("1/0 forward: not run" in n for n in bench.notes)


def test_a_wrapper_called_twice_gives_two_runs_through_its_kernels():
    fw = "/c/fw.py"
    names = ["mm", "triton_poi_fused_clone_0", "relu_kernel_0", "triton_poi_fused_clone_0"]
    launches = [_launch(n, fw, 7, "extern" if n == "mm" else "triton") for n in names * 2]  # same frame id reused
    bench = roofline.summarize(_report(), _measured(launches))
    fwd = [k for k in bench.kernels if k.part == "forward"]
    assert [k.index for k in fwd] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    assert sum(1 for k in fwd if k.median_us > 0) == 8


def test_no_launch_seen_is_said():
    bench = roofline.summarize(_report(), _measured([]))
    assert bench.kernels == () and any("no kernel launch was seen" in n for n in bench.notes)


# ----------------------------------------------------------------------------- data model, renderer, CLI


def hand_built_bench() -> KernelBench:
    return roofline.summarize(_report(), _measured([
        _launch("mm", "/c/fw.py", 1, "extern", 20.0, [t("0", (64, 32)), t("1", (32, 16)), t("out", (64, 16), "write")]),
        _launch("triton_poi_fused_clone_0", "/c/fw.py", 1, us=5.0),
        _launch("relu_kernel_0", "/c/fw.py", 1, us=350.0,
                args=[t("input_ptr", (64 << 20,)), t("output_ptr", (64 << 20,))]),
        _launch("triton_poi_fused_clone_0", "/c/fw.py", 1, us=3.0),
    ]))


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_bench_section_round_trips(fmt):
    rep = _report(hand_built_bench())
    text = serialize.dumps(rep, fmt)
    again = serialize.loads(text)
    assert again == rep and again.bench == rep.bench
    data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert data["bench"]["device_name"] == "NVIDIA H100 80GB HBM3"
    assert data["bench"]["peaks"][0] == {"kind": "memory_bandwidth", "value": 3352.3, "unit": "GB/s",
                                         "source": "device properties", "dtype": ""}


def test_a_report_without_bench_is_written_as_before():
    assert "bench" not in serialize.to_dict(_report())
    assert "bench" not in yaml.safe_load(serialize.dumps(_report(), "yaml"))
    assert serialize.loads(serialize.dumps(_report(), "json")).bench is None


def test_sorted_views():
    rep = _report(hand_built_bench())
    by_time = [k.name for _, k in bench_rows(rep, "time")]
    assert by_time[:4] == ["relu_kernel_0", "mm", "triton_poi_fused_clone_0", "triton_poi_fused_clone_0"]
    assert by_time[-1] == "cpp_fused_sum_1"  # untimed last
    peaks = [k.pct_of_roofline for _, k in bench_rows(rep, "peak") if k.median_us > 0]
    assert peaks == sorted(peaks)
    assert [n for n, _ in bench_rows(rep, "launch")] == list(range(len(rep.bench.kernels)))


def test_document_carries_units_device_and_every_kernel():
    rep = _report(hand_built_bench())
    doc = bench_document(rep, "time")
    assert doc["device_name"] == "NVIDIA H100 80GB HBM3" and doc["units"]["gb_per_s"].startswith("GB/s")
    assert {"launch", "median_us", "bytes_read", "gb_per_s", "pct_of_roofline", "bound"} <= set(doc["kernels"][0])
    assert len(doc["kernels"]) == len(rep.bench.kernels)
    assert doc["end_to_end"][0]["speedup"] == 2.0


def test_renderer_shows_peaks_bars_and_end_to_end():
    from rich.console import Console

    rep = _report(hand_built_bench())
    console = Console(width=160, record=True, color_system=None)
    console.print(render.view(rep, bench_rows(rep, "time"), "time"))
    text = console.export_text()
    assert "NVIDIA H100 80GB HBM3" in text and "3,352.3 GB/s" in text and "2,900.0 GB/s" in text
    assert "compute (tf32)" in text and "494.5 TFLOP/s" in text
    assert "relu_kernel_0" in text and "█" in text and "not timed" in text
    assert "end to end, forward: eager 1.000 ms → compiled 0.500 ms" in text and "2.00× speedup" in text
    # the slowest first
    assert text.index("relu_kernel_0") < text.index("triton_poi_fused_clone_0")


def test_bar_and_sizes():
    assert render.bar(0) == "·" * render.BAR_WIDTH
    assert render.bar(100) == "█" * render.BAR_WIDTH
    assert render.bar(150) == render.bar(100)
    assert render.bar(50).startswith("█" * (render.BAR_WIDTH // 2))
    assert render.size(512) == "512 B" and render.size(16384) == "16.0 KiB" and render.size(256 << 20) == "256.0 MiB"


def needs_no_gpu(test):
    """Runs where torch sees no CUDA GPU (asked only when the test runs, so the torch-free layer imports no torch)."""
    skip = pytest.mark.skipif("cuda_available()", reason="checks the answer on a machine without a CUDA GPU")
    return pytest.mark.torch(skip(test))


@needs_no_gpu
def test_bench_without_a_gpu_is_one_line_before_anything_compiles(capsys, monkeypatch):
    from tcinspect.capturing import modelfile
    from tcinspect.capturing._compat import dynamo

    def must_not_run(*args, **kwargs):
        raise AssertionError("compiled or loaded the model despite --bench on a CPU machine")

    monkeypatch.setattr(dynamo, "compile_fn", must_not_run)
    monkeypatch.setattr(modelfile, "load", must_not_run)
    code, out, err = cli(capsys, "codegen", str(SAMPLES / "tiny.py"), "--bench")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--bench" in lines[0] and "CUDA GPU" in lines[0]


@needs_no_gpu
def test_a_cached_report_without_bench_does_not_answer_bench(capsys):
    path = SAMPLES / "tiny.py"
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    plain = cache.key(path, sha, Options(), ("model", "example_inputs"))
    cache.store(path, plain, _report())
    code, _, err = cli(capsys, "codegen", str(path), "--bench")
    assert code == 2 and "CUDA GPU" in err  # it went on to capture, not to the cached report
    assert cache.key(path, sha, Options(bench=100, device="cuda")) != cache.key(path, sha, Options(device="cuda"))


def test_saved_report_without_bench_says_to_rerun_with_bench(capsys, tmp_path):
    saved = tmp_path / "r.yaml"
    saved.write_text(serialize.dumps(_report(), "yaml"))
    code, out, err = cli(capsys, "codegen", str(saved), "--bench")
    assert code == 2 and out == ""
    (line,) = [x for x in err.splitlines() if x.startswith("tcinspect: error:")]
    assert "--bench" in line and "GPU" in line


def test_saved_report_with_bench_is_shown_and_written_as_yaml(capsys, tmp_path):
    saved = tmp_path / "r.json"
    saved.write_text(serialize.dumps(_report(hand_built_bench()), "json"))
    code, out, _ = cli(capsys, "codegen", str(saved), "--bench", "--sort", "launch")
    assert code == 0 and "Kernel benchmark · NVIDIA H100 80GB HBM3" in out and "end to end, forward" in out
    code, out, _ = cli(capsys, "codegen", str(saved), "--bench", "--format", "yaml", "--kernel", "triton_poi_*")
    doc = yaml.safe_load(out)
    assert code == 0 and [k["name"] for k in doc["kernels"]] == ["triton_poi_fused_clone_0"] * 2
    code, _, err = cli(capsys, "codegen", str(saved), "--bench", "--sort", "fastest")
    assert code == 2 and "--sort" in err


# ----------------------------------------------------------------------------- interception, on a CPU wrapper


def _mm_relu(x, w):
    return (x @ w).relu()


@pytest.mark.slow  # torch.compile's default backend: Inductor
def test_intercepted_launches_are_the_wrappers_extern_calls_and_replay_the_same(inductor_cache):
    """On a CPU, Inductor's wrapper calls extern_kernels.mm and a C++ kernel: the mm is handed over
    with its arguments, replays to the same result, and matches the report's kernel by wrapper text."""
    import torch

    from tcinspect.capturing._compat.launches import intercept_launches
    from tcinspect.capturing.engine import capture

    torch.manual_seed(0)
    x, w = torch.randn(32, 64), torch.randn(64, 16)
    rep = capture(_mm_relu, x, w, compile=CompileOptions(backward=False))
    assert next(k.name for o in rep.stages.inductor.outputs for k in o.kernels) == "mm"

    seen = []

    def hook(launch):
        copied, kwargs = gpu_timing._copy_arguments(launch.args, launch.kwargs)
        result = launch.replay(copied, kwargs)
        rec = Launch(launch.kind, launch.name, launch.wrapper, launch.frame_id, times_ms=[0.01] * 3)
        rec.args, rec.scalars = gpu_timing._describe(launch, copied, kwargs, result)
        seen.append((rec, kwargs.get("out")))

    torch._dynamo.reset()
    try:
        compiled = torch.compile(_mm_relu)
        compiled(x, w)  # compile outside the interception
        with intercept_launches(hook):
            out = compiled(x, w)
        x @ w  # not from a wrapper: not handed over
    finally:
        torch._dynamo.reset()
    assert [r.name for r, _ in seen] == ["mm"]
    rec, replayed = seen[0]
    torch.testing.assert_close(replayed, x @ w)
    torch.testing.assert_close(out, (x @ w).relu())
    assert [(a.shape, a.role or "read") for a in rec.args] == [((32, 64), "read"), ((64, 16), "read"), ((32, 16), "write")]
    measured = _measured([rec])
    measured.wrappers = {rec.wrapper: Path(rec.wrapper).read_text()}
    bench = roofline.summarize(rep, measured)
    mm = bench.kernels[0]
    assert (mm.name, mm.part, mm.index, mm.flops) == ("mm", rep.stages.inductor.outputs[0].part, 0, 2 * 32 * 64 * 16)
    assert all(k.median_us == 0 and "C++" in k.note for k in bench.kernels[1:])


def test_the_measured_timing_overhead_is_subtracted():
    m = _measured([_launch("mm", "/c/fw.py", 1, "extern", 10.0, [t("0", (64, 32)), t("1", (32, 16)),
                                                                  t("out", (64, 16), "write")])])
    m.launch_overhead_us = 3.0
    bench = roofline.summarize(_report(), m)
    assert bench.kernels[0].median_us == pytest.approx(7.0) and bench.launch_overhead_us == 3.0
    assert kernelmath.less_overhead(0.002, 3.0) == 0.01  # never 0: 0 means "not timed"


def test_runs_enqueued_after_the_gpu_hold_ended_are_dropped(monkeypatch):
    """A run whose launch took longer to enqueue than the GPU was held may include the GPU waiting
    for it: it is dropped; when most are, the runs are timed again with a longer hold."""
    import torch

    clock = {"now": 0.0}
    monkeypatch.setattr(gpu_timing.time, "perf_counter", lambda: clock["now"])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)

    class Event:
        def __init__(self, enable_timing=False):
            self.at = 0.0

        def record(self):
            self.at = clock["now"]

        def elapsed_time(self, end):
            return (end.at - self.at) * 1e3

    monkeypatch.setattr(torch.cuda, "Event", Event)
    holds = []
    flush = lambda hold_us: holds.append(hold_us)  # noqa: E731
    costs = iter([10e-6] * 3 + [10e-6, 500e-6] * 5 + [10e-6] * 10)  # warm-up, then every other run late

    def launch():
        clock["now"] += next(costs)

    times = gpu_timing.time_launch(launch, 10, flush)
    assert len(times) == 5 and all(t == pytest.approx(0.01) for t in times)
    assert holds == pytest.approx([20.0] * 10)
    costs = iter([10e-6] * 3 + [500e-6] * 10 + [10e-6] * 10)  # all late: again, with a longer hold
    holds.clear()
    times = gpu_timing.time_launch(launch, 10, flush)
    assert len(times) == 10 and holds == pytest.approx([20.0] * 10 + [80.0] * 10)
