"""`tcinspect shapes`: every symbol, specialization and shape guard equals torch's own events in the same run."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tcinspect.report import Report

ROOT = Path(__file__).resolve().parent.parent
SHAPES = Path(__file__).resolve().parent / "models" / "shapes"
DATA = Path(__file__).resolve().parent / "data" / "cpu-traces"
NAMES = ("create_symbol", "create_unbacked_symbol", "symbolic_shape_specialization", "guard_added_fast")


class TorchEvents(logging.Handler):
    """torch's dynamic-shape records, collected on their own (the oracle), file names un-interned."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[tuple[str, str, dict]] = []

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict):
            return
        for name in NAMES:
            if name in meta:
                from torch._logging.structured import INTERN_TABLE

                files = {i: f for f, i in INTERN_TABLE.items()}
                m = dict(meta[name])
                top = (m.get("user_stack") or [None])[-1]
                where = (Path(files.get(top["filename"], "?")).name, top["line"]) if top else None
                cid = f"{meta.get('frame_id')}/{meta.get('frame_compile_id')}"
                self.records.append((name, cid, {**m, "where": where}))


def _capture(model, inputs, sets, backend="eager", **config):
    import torch

    from tcinspect import capture
    from tcinspect.report import CompileOptions

    oracle = TorchEvents()
    trace = logging.getLogger("torch.__trace")
    trace.addHandler(oracle)
    try:
        with torch._dynamo.config.patch(**config):
            rep = capture(model, *inputs, input_sets=sets, compile=CompileOptions(backend=backend))
    finally:
        trace.removeHandler(oracle)
    return rep, oracle.records


def _where(loc):
    return (Path(loc.file).name, loc.line) if loc is not None else None


def _assert_equal_to_torch(rep: Report, records) -> None:
    """Each of torch's records is in the report, field for field, and the report has nothing else."""
    sh = rep.shapes
    assert sh is not None
    want_specs = [(c, m["symbol"], tuple(m["sources"]), m["value"], m["reason"], m["where"])
                  for n, c, m in records if n == "symbolic_shape_specialization"]
    got_specs = [(s.compile_id, s.symbol, s.sources, s.value, s.reason, _where(s.user_frame))
                 for s in sh.specializations]
    assert got_specs == want_specs
    want_syms = [(c, m["symbol"], m.get("source", ""), m.get("val", ""), m["vr"], n == "create_unbacked_symbol",
                  m["where"]) for n, c, m in records if n in ("create_symbol", "create_unbacked_symbol")]
    got_syms = [(y.compile_id, y.symbol, y.source, y.hint, y.value_range, y.unbacked, _where(y.user_frame))
                for y in sh.symbols]
    assert got_syms == want_syms
    want_guards = [(c, m["expr"], m["where"]) for n, c, m in records if n == "guard_added_fast"]
    assert [(g.compile_id, g.expression, _where(g.user_frame)) for g in sh.guards] == want_guards


@pytest.fixture(scope="module")
def loop_run():
    from tcinspect.capturing.engine import capture_file
    from tcinspect.report import CompileOptions

    oracle = TorchEvents()
    trace = logging.getLogger("torch.__trace")
    trace.addHandler(oracle)
    try:
        rep = capture_file(ROOT / "sample_models" / "shapes_loop.py", compile=CompileOptions(backend="eager"))
    finally:
        trace.removeHandler(oracle)
    return rep, oracle.records


def test_python_range_loop_specializes_at_its_line_and_advice_never_says_mark_dynamic(loop_run):
    rep, records = loop_run
    _assert_equal_to_torch(rep, records)
    specs = rep.shapes.specializations
    assert [s.value for s in specs] == ["24", "32", "40"]
    assert {s.reason for s in specs} == {"range_refined_to_singleton"}
    assert {(Path(s.user_frame.file).name, s.user_frame.line) for s in specs} == {("shapes_loop.py", 12)}
    assert all(s.library_frame is not None and "symbolic_shapes" not in s.library_frame.file for s in specs)
    assert len(rep.stages.dynamo.recompiles) == 3
    for r in rep.stages.dynamo.recompiles:
        assert "cannot keep it dynamic" in r.suggestion and "shapes_loop.py:12" in r.suggestion
        assert not r.suggestion.startswith("A tensor shape changed")
    from tcinspect.analysis.shapes import SPECIALIZED, dims, suggested_spec

    x1 = next(d for d in dims(rep) if d.dim == 1)
    assert (x1.status, x1.sizes) == (SPECIALIZED, (16, 24, 32, 40))
    spec = suggested_spec(rep)
    assert spec is not None and not spec.mark_dynamic and "shapes_loop.py:12" in spec.blocked


@pytest.mark.torch
def test_shape_dependent_branch():
    import runpy

    ns = runpy.run_path(str(SHAPES / "branch.py"))
    rep, records = _capture(ns["model"], ns["example_inputs"], ns["input_sets"])
    _assert_equal_to_torch(rep, records)
    # 24 takes the `== 24` branch: a constant in that graph; 32 takes the other and stays a symbol (Ne guard)
    assert [(s.compile_id, s.value) for s in rep.shapes.specializations] == [("0/1", "24")]
    assert [g.expression for g in rep.shapes.guards] == ["Eq(s27, 24)", "Ne(s27, 24)"] or \
        [g.expression.split("(")[0] for g in rep.shapes.guards] == ["Eq", "Ne"]
    assert all(_where(g.user_frame) == ("branch.py", 6) for g in rep.shapes.guards)


def test_item_makes_an_unbacked_symbol_at_its_line():
    import torch

    def model(x):
        n = x.sum().long().item()
        return torch.ones(n) * 2

    rep, records = _capture(model, (torch.full((2,), 1.5),), [], capture_scalar_outputs=True)
    _assert_equal_to_torch(rep, records)
    (u,) = [s for s in rep.shapes.symbols if s.unbacked]
    assert u.symbol.startswith("u") and u.user_frame.code == "n = x.sum().long().item()"
    assert any(g.expression.startswith(u.symbol) for g in rep.shapes.guards)


@pytest.mark.torch
def test_mark_dynamic_violation_names_the_line_that_forced_the_equality():
    import runpy

    from tcinspect.analysis.shapes import violations

    ns = runpy.run_path(str(SHAPES / "violation.py"))
    rep, records = _capture(ns["model"], ns["example_inputs"], [])
    assert not rep.ok
    _assert_equal_to_torch(rep, records)
    (v,) = violations(rep)
    assert v.source == "L['x'].size()[1]" and v.value == "16"
    assert _where(v.specialization.user_frame) == ("violation.py", 7)


def test_gpt2_over_four_lengths_equals_torch():
    pytest.importorskip("transformers")
    import runpy

    import torch

    ns = runpy.run_path(str(ROOT / "tests" / "models" / "gpt2_tiny.py"))
    sets = [(torch.randint(0, 256, (2, n)),) for n in (12, 20, 28)]
    rep, records = _capture(ns["model"], ns["example_inputs"], sets, backend="aot_eager")
    _assert_equal_to_torch(rep, records)
    assert rep.shapes.symbols and not rep.shapes.specializations
    from tcinspect.analysis.shapes import DYNAMIC, dims, suggested_spec

    seq = next(d for d in dims(rep) if d.dim == 1)
    assert seq.status == DYNAMIC and seq.sizes == (16, 12, 20, 28)
    spec = suggested_spec(rep)
    assert spec.mark_dynamic == ("torch._dynamo.mark_dynamic(input_ids, 1, min=12, max=28)",)
    # the recompile that made the length a symbol is explained as automatic dynamic, not "use mark_dynamic" blindly
    (r,) = rep.stages.dynamo.recompiles
    assert "automatic dynamic" in r.suggestion


def test_verify_spec_compiles_gpt2_once(tmp_path):
    pytest.importorskip("transformers")
    from tcinspect.capturing.specverify import verify_spec

    model = tmp_path / "gpt2_lengths.py"
    model.write_text((ROOT / "tests" / "models" / "gpt2_tiny.py").read_text()
                     + "input_sets = [(torch.randint(0, 256, (2, n)),) for n in (12, 20, 28)]\n")
    check = verify_spec(str(model), [("args[0]", 1, 12, 28)], backend="eager")
    assert verify_spec(str(model), [], backend="eager").compiles == 2  # without the spec: automatic dynamic
    assert (check.compiles, check.calls, check.error) == (1, 4, "")


def test_recorded_trace_parses_to_torchs_counts():
    """The 2.13 CPU recording (tests/data/record_shapes.py) against what torch logged in that run."""
    from tcinspect.parse import events as ev_mod
    from tcinspect.parse import shapes

    path = DATA / "2.13.0" / "shapes_loop.jsonl.gz"
    truth = json.loads((DATA / "2.13.0" / "shapes_expected.json").read_text())["shapes_loop"]
    sh, bad = shapes.build(ev_mod.read_jsonl(path))
    assert not bad and sh is not None
    assert [[s.compile_id, s.value, s.reason, s.user_frame.line] for s in sh.specializations] == truth["specializations"]
    assert [[y.compile_id, y.symbol, y.source, y.hint] for y in sh.symbols] == truth["symbols"]
    assert [[g.compile_id, g.expression, g.user_frame.line] for g in sh.guards] == truth["guards"]


def test_malformed_shape_event_is_counted_not_fatal():
    from tcinspect.parse.events import Event
    from tcinspect.parse.fromevents import report_from_events
    from tcinspect.report import Options, Target

    good = Event("symbolic_shape_specialization", 0, 1, meta={"symbol": "s0", "sources": ["L['x'].size()[0]"],
                                                              "value": "4", "reason": "r", "user_stack": None})
    broken = Event("symbolic_shape_specialization", 0, 1, meta={"symbol": "s0", "sources": "not a list"})
    rep = report_from_events([good, broken], target=Target(kind="callable"), options=Options(), device="cpu",
                             torch_version="2.13.0")
    assert len(rep.shapes.specializations) == 1
    assert [(c.name, c.count) for c in rep.parse.artifacts_not_understood] == [("symbolic_shape_specialization", 1)]
    from tcinspect.analysis.parse_health import parse_warning

    assert "symbolic_shape_specialization" in parse_warning(rep)


def test_shapes_round_trip_and_check_budget(loop_run):
    from tcinspect import serialize
    from tcinspect.analysis.check.specializations import check_specializations

    rep, _ = loop_run
    assert serialize.from_dict(json.loads(json.dumps(serialize.to_dict(rep)))).shapes == rep.shapes
    fails = [f for f in check_specializations("m", rep, 0, []) if f.status == "fail"]
    assert len(fails) == 4 and fails[1].line == 12
    assert check_specializations("m", rep, None, ["L[\"x\"].size()[1]"])[0].status == "ok"


@pytest.mark.parametrize("version", ["2.13.0", "2.14.1", "2.15.0"])
def test_recordings_of_each_cpu_torch_read_the_same_symbol(version):
    """create_symbol has the same fields in 2.13-2.15: each version's recording of layer_norm_shapes (the
    batch made a symbol at the first recompile) reads without a record left unread."""
    from tcinspect.parse import events as ev_mod
    from tcinspect.parse import shapes

    sh, bad = shapes.build(ev_mod.read_jsonl(DATA / version / "layer_norm_shapes.jsonl.gz"))
    assert not bad
    assert [(y.compile_id, y.source, y.hint, y.value_range) for y in sh.symbols] == \
        [("0/1", "L['x'].size()[0]", "16", "[2, int_oo]")]


@pytest.mark.parametrize("version", ["torch-2.13.0", "torch-2.15.0"])
def test_torch_trace_logs_name_the_files_of_shape_events(version):
    """A TORCH_TRACE log interns file names (`str` records): the reader names them."""
    from tcinspect.parse import rankpool

    rep = rankpool.read(Path(__file__).resolve().parent / "data" / "torch_trace" / version / "recompile_scalar.log.gz")
    (y,) = rep.shapes.symbols
    assert (y.source, y.hint, Path(y.user_frame.file).name, y.user_frame.line) == \
        ("L['multiplier']", "3.0", "recompile_scalar.py", 6)
    assert rep.parse is None


def _saved(loop_run, tmp_path) -> Path:
    from tcinspect import serialize

    rep, _ = loop_run
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(serialize.to_dict(rep)))
    return path


def test_cli_shapes_from_a_saved_report_table_yaml_and_html(loop_run, tmp_path, capsys):
    import yaml

    from helpers import cli
    from tcinspect.render.html import render

    saved = _saved(loop_run, tmp_path)
    code, out, _ = cli(capsys, "shapes", str(saved))
    assert code == 0 and "range_refined_to_singleton" in out and "cannot compile once" in out
    code, out, _ = cli(capsys, "shapes", str(saved), "--format", "yaml")
    doc = yaml.safe_load(out)
    assert code == 0 and [s["value"] for s in doc["shapes"]["specializations"]] == ["24", "32", "40"]
    assert doc["dims"][1]["status"] == "specialized" and doc["suggested_spec"]["mark_dynamic"] == []
    code, out, _ = cli(capsys, "trace", str(saved), "--stage", "shapes")
    assert code == 0 and "Specializations" in out
    page = render(loop_run[0])
    assert '<section id="shapes">' in page and "range_refined_to_singleton" in page


def test_verify_spec_needs_a_model_file(loop_run, tmp_path, capsys):
    from helpers import cli

    code, out, err = cli(capsys, "shapes", str(_saved(loop_run, tmp_path)), "--verify-spec")
    assert code == 2 and err.count("\n") == 1 and "--verify-spec needs a model file" in err and not out


def test_check_specializations_junit_and_baseline(loop_run, tmp_path, capsys):
    import xml.etree.ElementTree as ET

    from helpers import cli

    saved = _saved(loop_run, tmp_path)
    junit = tmp_path / "junit.xml"
    code, out, _ = cli(capsys, "check", str(saved), "--max-specializations", "0", "--junit", str(junit))
    assert code == 1 and "specializations 3 > max 0" in out
    assert ET.parse(junit).getroot().iter("failure") is not None and "specialization" in junit.read_text()
    code, _, _ = cli(capsys, "check", str(saved), "--static-ok", "L['x'].size()[1]")
    assert code == 0
    base = tmp_path / "base.yaml"
    assert cli(capsys, "check", str(saved), "--baseline", str(base), "--update")[0] == 0
    assert "L['x'].size()[1]" in base.read_text()
    assert cli(capsys, "check", str(saved), "--baseline", str(base))[0] == 0
    base.write_text(base.read_text().replace("- L['x'].size()[1]", "[]").replace("specialized:\n", "specialized:"))
    code, out, _ = cli(capsys, "check", str(saved), "--baseline", str(base))
    assert code == 1 and "new specialization" in out


# ----------------------------------------------------------------------------- shape guards against the final guards

FINAL = ["L['x'].stride()[0] == L['x'].size()[1]", "2 <= L['x'].size()[1] <= 2048"]
S0 = ("s0: L['x'].size()[1]",)


@pytest.mark.parametrize("expression, final, want", [
    ("Eq(s0, 16)", FINAL, "no"),  # a call with 17 passes the range: nothing checks it
    ("s0 <= 4096", FINAL, "yes"),  # the range checks it
    ("2*s0 <= 4096", FINAL, "yes"),
    ("s0 <= 1000", FINAL, "no"),
    ("Eq(64*s0, 1024)", ["L['x'].size()[1] == 16"], "yes"),  # the value torch installed satisfies it
    ("Eq(s0**2, 256)", ["L['x'].size()[1] == 16"], "yes"),
    ("Ne(Mod(s0, 8), 0)", ["8 <= L['x'].size()[1] <= 8"], "no"),
    ("s0 >= 2", ["2 <= L['x'].size()[1]"], "yes"),  # an open range: its end tried far out
    ("s0 <= 10**7", ["2 <= L['x'].size()[1]"], "no"),
    ("Eq(s0, 16)", ["L['y'].size()[0] == 3"], ""),  # no range or value for this source: not known
    ("foo(s0) > 1", FINAL, ""),  # nothing this reader evaluates
])
def test_whether_the_final_guards_enforce_a_shape_guard(expression, final, want):
    from tcinspect.parse.shape_guards import enforced

    assert enforced(expression, S0, final) == want


def test_a_guard_on_two_symbols_is_enforced_only_as_written():
    from tcinspect.parse.shape_guards import enforced

    two = ("s0: L['x'].size()[0]", "s1: L['y'].size()[0]")
    assert enforced("Eq(s0, s1)", two, ["L['x'].size()[0] == L['y'].size()[0]"]) == "yes"
    assert enforced("Eq(s0, s1)", two, ["2 <= L['x'].size()[0]"]) == ""


def test_the_stage_that_added_a_guard_is_the_innermost_compiler_frame():
    from tcinspect.parse.shapes import stage_of

    def frames(*names: str) -> list[dict]:
        return [{"filename": f"/venv/lib/python3.11/site-packages/torch/{n}", "line": 1, "name": "f"} for n in names]

    machinery = ("fx/experimental/symbolic_shapes.py", "_logging/_internal.py")
    assert stage_of(frames("_dynamo/convert_frame.py", "_functorch/aot_autograd.py", "_inductor/sizevars.py",
                           *machinery)) == "inductor"
    # an Inductor decomposition runs while AOTAutograd traces: AOTAutograd added the guard
    assert stage_of(frames("_dynamo/convert_frame.py", "_functorch/_aot_autograd/graph_compile.py",
                           "_inductor/decomposition.py", *machinery)) == "aot_autograd"
    assert stage_of(frames("_dynamo/symbolic_convert.py", *machinery)) == "dynamo"
    assert stage_of(None) == "" and stage_of(frames(*machinery)) == ""


def test_gpt2_s_backward_guards_read_as_what_torch_enforced():
    """GPT-2 trained on lengths 8, 16, 24, 32 (torch 2.13, recorded): compiling the backward of the dynamic graph
    evaluates Eq(s50, 16) and its multiples, which no later call checks: torch ran 24 and 32 through the same
    graph without a recompile. Each is marked not enforced, with the stage that added it, and the shapes view
    does not read it as a specialization."""
    from helpers import render_text
    from tcinspect.parse import rankpool
    from tcinspect.parse.shape_guards import _predicate
    from tcinspect.render import shapes as render

    log = Path(__file__).resolve().parent / "data" / "torch_trace" / "torch-2.13.0" / "gpt2_train_lengths.log.gz"
    rep = rankpool.read(str(log))
    assert [g.compile_id for g in rep.stages.dynamo.graphs] == ["0/0", "0/1"]  # four lengths, two compiles
    later = (24, 32)  # the calls after the one that compiled 0/1, run by it (no third compile)
    guards = rep.shapes.guards
    assert guards and all(g.compile_id == "0/1" and g.user_frame is None for g in guards)
    for g in guards:
        test = _predicate(g.expression, "s50")
        assert test is not None
        if g.in_final_guards == "no":
            assert not all(test(n) for n in later), g  # a later call broke it and ran all the same
        else:
            assert g.in_final_guards == "yes" and all(test(n) for n in later), g
    assert {(g.expression, g.stage, g.in_final_guards) for g in guards} >= {
        ("Eq(s50, 16)", "aot_autograd", "no"), ("s50 <= 4096", "inductor", "yes")}
    assert rep.shapes.specializations == ()
    text = render_text(render.shapes(rep), width=200)
    assert "7 shape guards (2 in the final guards)" in text and "not a specialization" in text
    assert "(none: added by AOTAutograd code)" in text


def test_a_shape_guard_evaluates_as_python_does_and_refuses_anything_else():
    """The guard is compiled once and run per value: for each relation sympy prints, its value at every size is
    Python's own value of the same text; a name, attribute or call it does not know makes it unreadable (None),
    and an exponent past 64 is not tried."""
    from tcinspect.parse.shape_guards import _CALLS, _predicate

    relations = ["Eq(s0, 16)", "s0 <= 4096", "Eq(Mod(s0, 8), 0)", "2*s0**2 + 3 > 10", "1 < s0 < 3",
                 "(s0 > 1) and (s0 < 5) or Eq(s0, 9)", "Ne(FloorDiv(s0, 2), Max(s0, 3) - Min(1, s0))",
                 "not Eq(Abs(-s0), 2)", "Eq(64*s0 - 64, 0)"]
    for text in relations:
        test = _predicate(text, "s0")
        assert test is not None, text
        assert [test(v) for v in range(-3, 40)] == [bool(eval(text, dict(_CALLS), {"s0": v})) for v in range(-3, 40)]
    for unreadable in ["s1 > 2", "s0.bit_length() > 2", "__import__('os')", "open(s0)", "s0 / 2 > 1", "s0 > 1.5"]:
        assert _predicate(unreadable, "s0") is None, unreadable
    with pytest.raises(ValueError):
        _predicate("s0 ** 100 > 1", "s0")(2)
