"""Guard cost: torch's guard latency per compile, lambda guards in the guard tree, guards that grow with the
model, and the per-call profile (``guards --per-call``), each checked against torch's own record of the same run."""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET

import pytest
import yaml

from builders.reports import make_report
from helpers import DATA, SAMPLES, cli
from tcinspect import serialize
from tcinspect.analysis import guard_cost as gc
from tcinspect.analysis.check.judge import check_limits
from tcinspect.analysis.check.limits import Limits, parse_limits
from tcinspect.parse import events as ev_mod
from tcinspect.parse.fromevents import report_from_events
from tcinspect.parse.guard_cost import lambda_guards, printed_latency
from tcinspect.report import (
    CallCost,
    CompileGuardCost,
    CompileOptions,
    DynamoGraph,
    DynamoStage,
    FrameCacheEntries,
    Graph,
    Guard,
    GuardCost,
    LambdaGuard,
    Options,
    PerCallCost,
    Report,
    Stages,
    Target,
)

RUNS = 5


def _gpt2(layers: int):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_embd=32, n_head=2, vocab_size=128, n_positions=64, bos_token_id=0,
                     eos_token_id=0)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    return GPT2LMHeadModel(cfg).eval(), ids


@pytest.fixture(scope="module")
def gpt2_runs(tmp_path_factory):
    """Tiny GPT-2 with 2 and 8 layers (Dynamo only), each with its calls timed: the report, torch's
    compilation metrics of the same run, and the profiler's own Chrome trace of the same profile."""
    import os

    import torch._dynamo.utils as dynamo_utils

    from tcinspect.capturing import percall
    from tcinspect.capturing.engine import capture

    out = {}
    for layers in (2, 8):
        model, ids = _gpt2(layers)
        trace = tmp_path_factory.mktemp("percall") / f"gpt2-{layers}.json"
        os.environ[percall.TRACE_ENV] = str(trace)
        dynamo_utils.clear_compilation_metrics()
        try:
            rep = capture(model, ids, compile=CompileOptions(backend="eager", backward=False), per_call=RUNS)
        finally:
            os.environ.pop(percall.TRACE_ENV, None)
        metrics = dynamo_utils.get_compilation_metrics()
        out[layers] = (rep, metrics, json.loads(trace.read_text()))
    return out


def test_guard_latency_is_torchs_own(gpt2_runs):
    assert len(gpt2_runs) == 2  # 2 and 8 layers
    for rep, metrics, _ in gpt2_runs.values():
        ours = {c.compile_id: c for c in rep.guard_cost.compiles}
        theirs = {str(m.compile_id): m.guard_latency_us for m in metrics}
        assert ours and set(ours) == set(theirs)
        for cid, us in theirs.items():
            assert us is not None and ours[cid].guard_latency_us == us
            # compilation_metrics holds int(latency); the guard tree's last line the same number, two decimals
            assert int(ours[cid].printed_latency_us) == us


def _profiler_lookups(trace: dict) -> list[tuple[int, float]]:
    """Oracle: per tcinspect call span in the profiler's own Chrome trace, the "TorchDynamo Cache Lookup"
    events inside it, summed (us)."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    spans = sorted((e for e in events if e["name"].startswith("tcinspect call ")), key=lambda e: e["ts"])
    out = []
    for s in spans:
        inside = [e for e in events if e["name"] == "TorchDynamo Cache Lookup" and e["tid"] == s["tid"]
                  and s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]]
        assert inside, "every compiled call looks its frame up"
        out.append((int(s["name"].rsplit(" ", 1)[1]), sum(e["dur"] for e in inside)))
    return out


@pytest.mark.parametrize("layers", [2, 8])
def test_lookup_per_call_matches_the_profilers_events(gpt2_runs, layers):
    rep, _, trace = gpt2_runs[layers]
    per = rep.guard_cost.per_call
    oracle = _profiler_lookups(trace)
    assert len(per.calls) == len(oracle) == RUNS
    for call, (index, us) in zip(per.calls, oracle):
        assert call.input_set == index and call.lookups == 1
        assert call.lookup_us == pytest.approx(us, rel=0.10)
        assert call.before_first_op_us is not None and call.lookup_us <= call.before_first_op_us <= call.call_us
        assert call.compile_ids == ("0/0",) and call.entries_tried == (1,)
    (s,) = gc.per_input_set(per.calls)
    assert s.lookup_us == pytest.approx(statistics.median(us for _, us in oracle), rel=0.10)
    assert [f.compile_ids for f in per.frames] == [("0/0",)] and per.compiled_during == ()


def test_guards_grow_per_layer(gpt2_runs):
    fams = {}
    for layers, (rep, _, _) in gpt2_runs.items():
        (g,) = rep.stages.dynamo.graphs
        top = gc.families(g.guards)[0]
        assert top.container == "L['self'].transformer.h[*]" and top.layers == layers
        fams[layers] = top
    # every block after the first has the same guards (the first also carries guards on the others: one more
    # per block), so the frame's guards grow linearly: by the same number for each block added
    (per_block,) = set(fams[8].per_layer[1:]) | set(fams[2].per_layer[1:])
    assert fams[8].per_layer[0] - fams[2].per_layer[0] == 6
    graphs = {n: len(r.stages.dynamo.graphs[0].guards) for n, (r, _, _) in gpt2_runs.items()}
    assert (graphs[8] - graphs[2]) % 6 == 0 and (graphs[8] - graphs[2]) // 6 >= per_block + 1
    names = {lv.name for lv in gc.levers(gpt2_runs[8][0])}
    assert {"recursive dict tags", "skip_guard_eval_unsafe"} <= names and "specialize_float" not in names


# ----------------------------------------------------------------------------- recorded traces (no torch)


@pytest.mark.parametrize("path", ["cpu-traces/2.13.0/gpt2_tiny.jsonl.gz", "cpu-traces/2.15.0/gpt2_tiny.jsonl.gz",
                                  "gpu-trace-torch2.11-h200.jsonl.gz"])
def test_recorded_traces_carry_the_latency(path):
    """torch 2.11, 2.13 and 2.15 write both: compilation_metrics' guard_latency_us and the guard tree's last line."""
    events, _ = ev_mod.read_trace(DATA / path)
    rep = report_from_events(events, target=Target(kind="model"), options=Options(), device="cpu", torch_version="")
    stated = {e.compile_id: e.meta["guard_latency_us"] for e in events
              if e.name == "compilation_metrics" and e.meta.get("guard_latency_us") is not None}
    timed = {c.compile_id: c for c in rep.guard_cost.compiles if c.guard_latency_us is not None}
    assert stated and {cid: c.guard_latency_us for cid, c in timed.items()} == stated
    for c in timed.values():
        assert int(c.printed_latency_us) == c.guard_latency_us


def test_lambda_guard_placement():
    tree = "\n".join([
        "TREE_GUARD_MANAGER:",
        "+- RootGuardManager",
        "| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # a.py:1 in f",
        "| +- GuardManager: source=L['self'], accessed_by=FrameLocalsGuardAccessor(key='self'), type=<class 'M'>",
        "| | +- GuardManager: source=L['self'].w, accessed_by=GetAttrGuardAccessor(w), type=<class 'float'>",
        "| | | +- LAMBDA_GUARD: 2 <= L['self'].w  # x = self.w  # m.py:3 in forward",
        "| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x'), type=<class 'Tensor'>",
        "| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, torch.float32, size=[4], stride=[1])",
        "+- LAMBDA_GUARD: not math.isnan(L['s'])  # implicit guard for float input due to NaN specialization",
        "",
        "Guard latency = 12.34 us",
    ])
    placed = [(x.placement, x.source) for x in lambda_guards(tree)]
    assert placed == [("root", ""), ("leaf", "L['self'].w"), ("epilogue", "L['s']")]
    assert printed_latency(tree) == 12.34 and printed_latency("no line") is None


def test_layer_families_skip_arguments_and_closures():
    guards = tuple(Guard("type", "TYPE_MATCH", src, f"___check_type_id({src}, 1)") for src in (
        "L['args'][0]", "L['args'][1]", "L['self']._modules['h']._modules['0']._modules['attn']",
        "L['self']._modules['h']._modules['1']._modules['attn']", "L['self']._modules['h']._modules['1']",
        "L['f'].__closure__[0].cell_contents", "L['f'].__closure__[1].cell_contents", "L['x'].size()[0]"))
    (fam,) = gc.families(guards)
    assert (fam.container, fam.layers, fam.per_layer, fam.guards) == ("L['self'].h[*]", 2, (1, 2), 3)
    assert gc.readable("L['self']._modules['h']._modules['0']._parameters['weight']") == "L['self'].h[0].weight"


# ----------------------------------------------------------------------------- hand-built: YAML, views, check


def _hand(latency: float = 611.0) -> Report:
    guard = Guard("tensor", "TENSOR_MATCH", "L['x']", "check_tensor(L['x'], Tensor, torch.float32, size=[4])")
    graph = DynamoGraph("0/0", "forward", "/p/m.py", 3, Graph("dynamo_output_graph", "def forward(x): ...\n"), (guard,))
    cost = GuardCost(
        compiles=(CompileGuardCost("0/0", "forward", latency, latency + 0.48,
                                   (LambdaGuard("not math.isnan(L['s'])", "epilogue", "L['s']",
                                                "implicit guard for float input due to NaN specialization"),)),),
        per_call=PerCallCost(runs=2, calls=(
            CallCost(0, 900.0, 300.0, 1, 400.0, ("0/0",), (1,)), CallCost(0, 1100.0, 320.0, 1, 420.0, ("0/0",), (1,))),
            frames=(FrameCacheEntries("forward", "/p/m.py", 3, ("0/0",)),)))
    return make_report(stages=Stages(dynamo=DynamoStage("ok", "", (graph,))), calls=1, guard_cost=cost)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_guard_cost_round_trips(fmt):
    rep = _hand()
    again = serialize.loads(serialize.dumps(rep, fmt))
    assert again.guard_cost == rep.guard_cost
    assert "guard_cost" not in serialize.to_dict(rep, timings=False)  # measured: --no-timings leaves it out


def test_guards_view_shows_latency_lambda_guards_per_call_and_levers(capsys, tmp_path):
    saved = tmp_path / "r.yaml"
    saved.write_text(serialize.dumps(_hand(), "yaml"))
    code, out, _ = cli(capsys, "guards", str(saved))
    assert code == 0
    assert "guard latency 611.48 us (0/0" in out and "latency us" in out and "611.48" in out
    assert "not math.isnan(L['s'])" in out and "epilogue" in out
    assert "cache lookup us" in out and "310.00" in out  # the median of 300 and 320
    assert "specialize_float" in out and "risk" in out
    code, out, _ = cli(capsys, "guards", str(saved), "--format", "yaml")
    doc = yaml.safe_load(out)["guard_cost"]
    assert doc["compiles"][0]["guard_latency_us"] == 611.0 and doc["compiles"][0]["lambda_guards"] == 1
    assert doc["per_call"]["input_sets"][0]["lookup_us"] == 310.0
    assert doc["per_call"]["input_sets"][0]["before_first_op_share"] == round(410 / 1000, 4)


def test_html_has_the_guard_cost():
    from tcinspect.render.html import render

    page = render(_hand())
    assert "Guard cost" in page and "611.48" in page and "specialize_float" in page


def test_check_guard_latency_budget_baseline_and_junit(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved = tmp_path / "m.yaml"
    saved.write_text(serialize.dumps(_hand(611.0), "yaml"))
    code, out, _ = cli(capsys, "check", str(saved), "--max-guard-latency-us", "500", "--junit", "j.xml")
    assert code == 1 and "guard latency 611 us at 0/0 > max 500 us" in out
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1" and "guard_latency" in ET.tostring(suite, encoding="unicode")
    assert cli(capsys, "check", str(saved), "--max-guard-latency-us", "700")[0] == 0
    lock = tmp_path / "lock.yaml"
    assert cli(capsys, "check", str(saved), "--baseline", str(lock), "--update", "--guard-latency-tolerance", "20")[0] == 0
    assert yaml.safe_load(lock.read_text())["models"]["m.yaml"]["guard_latency_us"] == 611.0
    saved.write_text(serialize.dumps(_hand(900.0), "yaml"))
    code, out, _ = cli(capsys, "check", str(saved), "--baseline", str(lock), "--guard-latency-tolerance", "20")
    assert code == 1 and "guard latency 900 us at 0/0 vs baseline 611 us (+47%" in out
    code, _, err = cli(capsys, "check", str(saved), "--guard-latency-tolerance", "20")
    assert code == 2 and "compares with a baseline" in err


def test_check_refuses_a_report_without_latency(tmp_path):
    rep = make_report()
    with pytest.raises(Exception, match="has no guard latency"):
        check_limits("m.py", rep, Limits(guard_latency_us=10.0))
    assert parse_limits({"max_guard_latency_us": 250}, "pyproject").guard_latency_us == 250.0
    with pytest.raises(Exception, match="max_guard_latency_us"):
        parse_limits({"max_guard_latency_us": "fast"}, "pyproject")


@pytest.mark.torch
def test_per_call_on_a_model_file_and_refused_for_a_script(capsys, tmp_path):
    code, out, _ = cli(capsys, "guards", str(SAMPLES / "recompile_scalar.py"), "--per-call", "2")
    assert code == 0 and "cache lookup" in out and "entries tried" in out
    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.compile(lambda x: x + 1, backend='eager')(torch.ones(2)))\n")
    code, _, err = cli(capsys, "guards", str(script), "--per-call", "2")
    assert code == 2 and "--per-call" in err


@pytest.mark.torch
def test_per_call_warms_up_and_times_without_the_captures_own_objects_in_the_collectors_reach():
    """The timed calls come after WARMUP_ROUNDS untimed rounds, and while they run the objects alive before them
    (the capture's records among them) are frozen out of the cycle collector, which is restored after."""
    import gc as collector

    import torch

    from tcinspect.capturing import percall

    seen: list[tuple[bool, int]] = []

    def model(x):
        seen.append((torch.autograd.profiler._is_profiler_enabled, collector.get_freeze_count()))
        return x + 1

    record = percall.measure(model, [(0, (torch.ones(2),))], 3, lambda: [])  # a plain callable stands for it
    warm = seen[:percall.WARMUP_ROUNDS]
    assert warm and all(not profiled for profiled, _ in warm)  # untimed, before the profiler starts
    timed = seen[percall.WARMUP_ROUNDS:]
    assert len(timed) == 1 + 3 and all(profiled and frozen > 0 for profiled, frozen in timed)
    assert collector.get_freeze_count() == 0 and len(record["calls"]) == 3
