"""The step-peak measurement runs only when asked for (``memory``, ``check``'s peak budgets, ``measure_memory``),
other captures and their cache keys stay as they were, and Inductor's estimates say when a compile was warm."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import pytest

from builders.reports import make_report
from tcinspect import cache, request
from tcinspect.analysis import memory as views
from tcinspect.analysis.check.limits import Limits
from tcinspect.analysis.check.section_findings import measures_peaks
from tcinspect.report import (
    CompileOptions,
    GraphMemory,
    InductorPeak,
    InductorStage,
    Memory,
    MemoryMeasurement,
    Options,
    OutputCode,
    Report,
    SavedTensor,
    Stages,
    Target,
)

_GRAPH = GraphMemory("0/0", saved=(SavedTensor("mm", "activation", "f32", ("4", "8"), 128, op="aten.mm"),))


def _report(device: str = "cuda", measured: bool = False, options: Optional[Options] = None) -> Report:
    m = MemoryMeasurement("H100", "m", compiled_peak=300, eager_peak=200, compiled_start=100, eager_start=100)
    return make_report(torch_version="2.11.0", device=device, target=Target(kind="model", path="m.py"),
                       options=options or Options(),
                  memory=Memory(graphs=(_GRAPH,), measured=m if measured else None))


def test_the_request_carries_measure_memory_and_only_a_measuring_key_changes(tmp_path):
    assert request.Request().options.measure_memory is False
    assert request.Request(measure_memory=True).options == replace(Options(), measure_memory=True)
    # a capture that does not measure keeps the key it had before the option existed
    assert "measure_memory" not in cache.keyed_options(Options())
    assert cache.keyed_options(Options(measure_memory=True))["measure_memory"] is True
    f = tmp_path / "m.py"
    f.write_text("")
    assert cache.key(f, "x", Options()) != cache.key(f, "x", Options(measure_memory=True))


def test_a_cuda_report_without_a_measurement_does_not_answer_a_request_to_measure():
    asked = Options(measure_memory=True)
    assert request._unmeasured(_report("cuda"), asked)  # re-captured, not reused
    assert not request._unmeasured(_report("cuda", measured=True), asked)
    assert not request._unmeasured(_report("cpu"), asked)  # a CPU run measures nothing either way
    assert not request._unmeasured(_report("cuda"), Options())  # not asked
    assert not request._unmeasured(_report("cuda", options=Options(backward=False)), asked)


def _record_requests(monkeypatch, tmp_path):
    """Replace the capture with one that records each Request; a model file to point commands at."""
    seen: list[request.Request] = []

    def fake(req):
        seen.append(req)
        return request.Obtained(_report("cuda", measured=req.measure_memory))

    monkeypatch.setattr(request, "obtained", fake)
    model = tmp_path / "model.py"
    model.write_text("model = None\nexample_inputs = ()\n")
    return seen, str(model)


def test_only_memory_and_a_peak_budget_ask_the_capture_to_measure(tmp_path, monkeypatch, capsys):
    from helpers import cli

    seen, model = _record_requests(monkeypatch, tmp_path)
    assert cli(capsys, "memory", model)[0] == 0
    assert seen[-1].measure_memory
    # a report captured without the measurement answers where it could not have had one (on a CPU)
    assert [o.measure_memory for o in seen[-1].also_accept] == [False]
    for args in (["trace", model], ["breaks", model], ["check", model, "--max-saved-bytes", "1000"]):
        cli(capsys, *args)
        assert not seen[-1].measure_memory, args
    assert cli(capsys, "check", model, "--max-peak-ratio", "2")[0] == 0
    assert seen[-1].measure_memory


def test_check_measures_for_a_baseline_that_records_a_peak_ratio():
    assert measures_peaks(Limits(peak_ratio=1.5), None)
    assert measures_peaks(Limits(), {"saved_bytes": 10, "peak_ratio": 1.2})
    assert not measures_peaks(Limits(saved_bytes=10), {"saved_bytes": 10})
    assert not measures_peaks(Limits(), None)


class _FakeRun:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.cudagraph_steps = False
        self.recorder = type("R", (), {"call": 0})()


def test_the_measurement_runs_its_steps_only_when_asked(monkeypatch):
    import torch

    from tcinspect.capturing import memory

    steps: list[object] = []
    monkeypatch.setattr(memory, "step_peak", lambda fn, *a, **k: steps.append(fn) or (100, 300, 50))
    monkeypatch.setattr(memory, "cudagraph_pool_bytes", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "GPU")
    compiled, model = object(), object()
    assert memory.measure(model, compiled, (), _FakeRun(Options()), "cuda") is None
    assert steps == []
    assert memory.measure(model, compiled, (), _FakeRun(Options(measure_memory=True)), "cpu") is None
    assert steps == []
    got = memory.measure(model, compiled, (), _FakeRun(Options(measure_memory=True)), "cuda")
    assert got is not None and got.compiled_peak == 300
    # each measured step right after a warm-up step of the same function
    assert steps == [compiled] * (memory.WARMUP_STEPS + 1) + [model] * (memory.WARMUP_STEPS + 1)
    assert memory.attach(_report("cuda").replace(memory=Memory(graphs=(_GRAPH,))), None, "cuda",
                         Options()).memory.not_measured == memory.NOT_ASKED


def test_a_capture_not_asked_to_measure_runs_the_model_as_often_as_a_plain_run(monkeypatch):
    """On a device taken for CUDA, a capture that does not ask makes the plain run's one training step (counted by a
    gradient hook) and no memory measurement's, and says why nothing was measured; the measurement would need a real
    GPU. Every capture makes one more call after its record, the runtime coverage's (docs/coverage.md): counted
    apart, by the report saying it measured one."""
    import torch

    from tcinspect.capturing import engine, memory, recording

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    steps: list[int] = []
    model[0].weight.register_hook(lambda g: steps.append(1))  # once per backward
    x = torch.randn(4, 8)
    plain = engine.capture(model, x, compile=CompileOptions(backend="aot_eager"), quiet=True)
    coverage_call = 1 if plain.coverage.runtime.not_measured == "" else 0
    assert plain.ok and len(steps) == 1 + coverage_call
    steps.clear()
    monkeypatch.setattr(recording, "device_of", lambda *a: "cuda")
    rep = engine.capture(model, x, compile=CompileOptions(backend="aot_eager"), quiet=True)
    coverage_call = 1 if rep.coverage.runtime.not_measured == "" else 0
    assert rep.ok and rep.device == "cuda" and len(steps) == 1 + coverage_call
    assert rep.memory.measured is None and rep.memory.not_measured == memory.NOT_ASKED


def _warm_report(peaks: tuple[InductorPeak, ...], caches: tuple[str, str]) -> Report:
    outputs = tuple(OutputCode("0/0", f"0_{part}", part, "", cache=c) for part, c in zip(("forward", "backward"), caches))
    return make_report(torch_version="2.13.0", device="cpu", target=Target(kind="model"),
                       stages=Stages(inductor=InductorStage(outputs=outputs)),
                  memory=Memory(graphs=(replace(_GRAPH, inductor_peaks=peaks),)))


def test_a_warm_compile_says_why_inductor_estimated_nothing_or_where_its_estimate_came_from():
    from tcinspect.render import memory as render

    kept = InductorPeak("backward", "0_backward", (("baseline", 2048), ("topological_sort_lpmf", 1024)))
    rep = _warm_report((kept,), ("hit", "hit"))
    est = views.estimates(rep, rep.memory.graphs[0])
    assert [(e.part, e.peak, e.note) for e in est] == [("forward", None, views.WARM_NO_ESTIMATE),
                                                       ("backward", kept, views.WARM_KEPT)]

    from helpers import render_text

    text = " ".join(render_text(render.table(rep), 400).split())
    assert f"Inductor's peak estimate, forward (0_forward): {views.WARM_NO_ESTIMATE}" in text
    assert f"(0_backward): 1.0 KiB [baseline 2.0 KiB, topological_sort_lpmf 1.0 KiB] {views.WARM_KEPT}" in text
    doc = views.document(rep)["graphs"][0]["inductor_estimates"]
    assert doc[0] == {"part": "forward", "aot_id": "0_forward", "bytes": None, "note": views.WARM_NO_ESTIMATE}
    cold = _warm_report((kept,), ("miss", "miss"))
    assert [e.note for e in views.estimates(cold, cold.memory.graphs[0])] == [views.NOT_LOGGED, ""]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_measure_memory_round_trips_and_older_reports_load(fmt):
    import json

    from tcinspect import serialize

    rep = _report("cuda", measured=True, options=Options(measure_memory=True))
    assert serialize.loads(serialize.dumps(rep, fmt)) == rep
    older = json.loads(serialize.dumps(_report("cuda"), "json"))
    del older["options"]["measure_memory"]  # a report saved before the option existed
    assert serialize.loads(json.dumps(older)).options.measure_memory is False
