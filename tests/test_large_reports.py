"""LLM-sized reports: the fast read gives the same Report as the slow one, and pictures always finish.

No test here times anything: bench/llm_bench.py measures; these prove that the fast paths are the
same paths (equal Reports, the same error messages) and that large graphs get a picture.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from builders import llm_report, synthetic
from builders.reports import make_report
from tcinspect import cache, errors, serialize
from tcinspect.errors import ReportFormatError
from tcinspect.render import dot as graphviz
from tcinspect.render import html, layered, picture, svg
from tcinspect.report import Report
from tcinspect.serialize import yaml_read
from tcinspect.serialize.build import build

DATA = Path(__file__).resolve().parent / "data"
#: PyYAML's reading of the text, the reference the fast read is held to: libyaml's loader where PyYAML has it
#: (the same data as the pure-Python SafeLoader, 20 times faster on these reports)


@pytest.fixture(scope="module")
def llm() -> Report:
    return llm_report.build(3)  # 3 layers: each of its three graphs has more nodes than DOT draws (200)


def _recorded(name: str) -> Report:
    from tcinspect.parse import assemble
    from tcinspect.parse.events import read_jsonl

    stages, _ = assemble.build(read_jsonl(DATA / name))
    return make_report(torch_version="2.13.0+cpu", stages=stages,
                       calls=1)


def _slow(data: dict) -> Report:
    """``from_dict`` as it was: every value through ``_build``."""
    known = {f.name for f in dataclasses.fields(Report)}
    fields = {k: v for k, v in data.items() if k in known and k != "timings"}
    rep = build(Report, fields, "report")
    return dataclasses.replace(rep, timings=tuple((str(k), float(v)) for k, v in (data.get("timings") or {}).items()))


@pytest.mark.parametrize("make", [lambda: llm_report.build(1), lambda: synthetic.build(500),
                                  lambda: _recorded("provenance-gpt2-torch2.13.0-cpu.jsonl.gz"),
                                  lambda: _recorded("provenance-llama-torch2.11.0-cuda.jsonl.gz")],
                         ids=["llm-1-layer", "synthetic-500", "recorded-gpt2", "recorded-llama"])
def test_fast_build_equals_the_slow_build(make):
    rep = make()
    slow: dict[str, Report] = {}  # the slow build of each distinct data read (json's text tells 1, 1.0, true apart)
    for fmt in ("yaml", "json"):
        text = serialize.dumps(rep, fmt)
        # the YAML as data: tcinspect's reader, which reads what PyYAML reads (test_serialize_paths shows it on
        # recorded reports of every kind; PyYAML itself takes a second for a few MB)
        data = json.loads(text) if fmt == "json" else yaml_read.parse(text)
        fast = serialize.loads(text)
        key = json.dumps(data)
        if key not in slow:  # the formats read the same data: built once
            slow[key] = _slow(data)
        assert fast == slow[key] == rep
        assert fast.summary == rep.summary and fast.timings == rep.timings
        # every object is an instance of its class with exactly its fields, as the constructor makes them
        kernel = fast.stages.inductor.outputs[0].kernels[0]
        assert type(kernel) is type(rep.stages.inductor.outputs[0].kernels[0])
        assert set(vars(kernel)) == {f.name for f in dataclasses.fields(kernel)}
        with pytest.raises(dataclasses.FrozenInstanceError):
            kernel.name = "x"  # type: ignore[misc]  # frozen: assigning must raise


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["stages"]["inductor"]["outputs"][0]["kernels"][1].__setitem__("source_nodes", "mm"),
     "'report.stages.inductor.outputs[0].kernels[1].source_nodes' should be a list, not str"),
    (lambda d: d["stages"]["dynamo"]["graphs"][0]["graph"]["nodes"][100]["source"].__setitem__("line", True),
     "'report.stages.dynamo.graphs[0].graph.nodes[100].source.line' should be an integer, not bool"),
    (lambda d: d["stages"]["aot_autograd"]["graphs"][0]["forward"]["nodes"][2].pop("name"),
     "missing key 'report.stages.aot_autograd.graphs[0].forward.nodes[2].name'"),
    (lambda d: d["compiles"][0].__setitem__("backend_compile_time_s", "1.5"),
     "'report.compiles[0].backend_compile_time_s' should be a number, not str"),
])
def test_fast_build_rejects_what_the_slow_one_does_with_its_message(llm, damage, message):
    data = json.loads(serialize.dumps(llm, "json"))
    damage(data)
    with pytest.raises(ReportFormatError) as exc:
        serialize.loads(json.dumps(data), name="r.json")
    assert exc.value.cause == f"r.json: {message}"


def test_numbers_read_as_the_slow_path_reads_them(llm):
    data = json.loads(serialize.dumps(llm, "json"))
    data["compiles"][0]["backend_compile_time_s"] = 3  # an int where a float is declared: read as 3.0
    rep = serialize.from_dict(data)
    assert rep.compiles[0].backend_compile_time_s == 3.0 and type(rep.compiles[0].backend_compile_time_s) is float
    assert rep == _slow(data)


def test_reading_leaves_the_garbage_collector_as_it_was(llm):
    text = serialize.dumps(llm, "json")
    assert gc.isenabled()
    serialize.loads(text)
    assert gc.isenabled()
    gc.disable()
    try:
        serialize.loads(text)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ReportFormatError):
        serialize.loads("{not json or yaml: [")
    assert gc.isenabled()


# ----------------------------------------------------------------------------- JSON twins


def test_yaml_written_by_the_cli_reads_back_through_its_twin(llm, tmp_path, capsys):
    from typer.testing import CliRunner

    from tcinspect.cli import app

    saved = tmp_path / "llm.json"
    serialize.write_atomic(saved, serialize.dumps(llm, "json"))
    out = tmp_path / "llm.yaml"
    result = CliRunner().invoke(app, ["trace", str(saved), "-o", str(out)])
    assert result.exit_code == 0, result.output
    twins = list((cache.cache_dir() / "twins").glob("*.json"))
    assert len(twins) == 1  # written with the YAML, so the first read is fast too
    assert serialize.loads(twins[0].read_text()) == serialize.load(out) == llm
    assert cache.read_report(out) == serialize.load(out)
    # a query through the CLI reads the same report
    result = CliRunner().invoke(app, ["trace", str(out), "--stage", "summary", "--format", "json"])
    assert json.loads(result.stdout)["summary"] == json.loads(serialize.dumps(llm, "json"))["summary"]


def test_a_yaml_without_twin_is_read_and_its_twin_kept(llm, tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(serialize.dumps(llm, "yaml"))
    assert not (cache.cache_dir() / "twins").exists()
    first = cache.read_report(path)
    assert len(list((cache.cache_dir() / "twins").glob("*.json"))) == 1
    assert cache.read_report(path) == first == serialize.load(path) == llm


def test_an_edited_yaml_never_matches_its_old_twin(llm, tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(serialize.dumps(llm, "yaml"))
    cache.read_report(path)
    path.write_text(path.read_text().replace("torch_version: \"2.11.0+cu130\"", "torch_version: \"9.9\"", 1))
    assert cache.read_report(path).torch_version == "9.9"
    assert len(list((cache.cache_dir() / "twins").glob("*.json"))) == 2


def test_a_damaged_twin_is_ignored_and_written_again(llm, tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(serialize.dumps(llm, "yaml"))
    cache.read_report(path)
    (twin,) = (cache.cache_dir() / "twins").glob("*.json")
    twin.write_text('{"schema_version": 1, "stages": ')
    assert cache.read_report(path) == llm
    assert serialize.loads(twin.read_text()) == llm


def test_a_cache_that_cannot_be_written_costs_only_speed(llm, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(blocker / "cache"))  # under a file: mkdir fails
    path = tmp_path / "r.yaml"
    path.write_text(serialize.dumps(llm, "yaml"))
    assert cache.read_report(path) == llm
    cache.remember_twin(path.read_text(), llm)


def test_read_report_keeps_the_loaders_messages(tmp_path):
    with pytest.raises(ReportFormatError, match="no such file"):
        cache.read_report(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: [1\n")
    with pytest.raises(ReportFormatError, match="not valid YAML or JSON"):
        cache.read_report(bad)


# ----------------------------------------------------------------------------- pictures


def _svg_nodes(text: str) -> list[ET.Element]:
    root = ET.fromstring(text)
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"]


def test_layered_draws_every_node_and_edge_of_a_large_graph(llm):
    pic = next(p for p in picture.pictures(llm) if p.key == "0_backward")
    assert len(pic.graph.nodes) > svg.DOT_NODES
    text, drawn, note = layered.layered(pic)
    assert drawn == len(pic.graph.nodes) and not note
    nodes = _svg_nodes(text)
    assert len(nodes) == drawn
    # one curve per FX input edge: count the argument names that are earlier nodes
    names: set[str] = set()
    edges = 0
    for n in pic.graph.nodes:
        edges += len(set(t for t in picture.NODE_NAME.findall(n.args) if t in names))
        names.add(n.name)
    assert text.count("C") - text.count("Cut") >= edges > len(pic.graph.nodes)
    # kernels colour the nodes they fused, as in the Graphviz drawing
    coloured = [g for g in nodes if g.find("{http://www.w3.org/2000/svg}rect").get("fill") in picture.PALETTE]
    assert len(coloured) >= sum(1 for k in next(o for o in llm.stages.inductor.outputs if o.part == "backward").kernels
                                if k.kind != "extern")


def test_layered_cuts_with_a_marker_past_its_limit():
    from tests.test_html import chain_report

    pic = picture.pictures(chain_report(3000))[0]
    text, drawn, note = layered.layered(pic, limit=1000)
    assert drawn == 1000 and len(_svg_nodes(text)) == 1000
    assert "2,000 more nodes not drawn" in text and "first 1,000 of 3,000" in note


def test_standalone_svg_of_a_large_graph_needs_no_graphviz(llm, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot: large graphs never needed it
    text = svg.svg(llm, ["0_backward"])
    assert text.startswith("<?xml") and len(_svg_nodes(text)) == len(
        next(p for p in picture.pictures(llm) if p.key == "0_backward").graph.nodes)


def test_a_layout_dot_cannot_finish_in_time_is_drawn_anyway(monkeypatch):
    from tests.test_html import hand_report

    def slow(text, timeout=0):
        raise errors.GraphvizTimeout("Graphviz's `dot` took longer than 1 s to lay the graph out", "")

    monkeypatch.setattr(graphviz, "run_dot", slow)
    page = html.render(hand_report())
    assert "laid out by tcinspect" in page and "Not drawn" not in page
    assert "laid out by tcinspect" in svg.svg(hand_report())


def test_page_of_a_large_report_draws_every_graph(llm, monkeypatch):
    monkeypatch.setattr(graphviz, "run_dot", lambda text, timeout=0: pytest.fail("large graphs never go to dot"))
    big = [p for p in picture.pictures(llm) if len(p.graph.nodes) > svg.DOT_NODES]
    assert len(big) == len(picture.pictures(llm)) == 3
    ticks: list[tuple[int, int]] = []
    page = html.render(llm, lambda done, total: ticks.append((done, total)))
    assert page.count("laid out by tcinspect") == 3 and "Not drawn" not in page and "Cut short" not in page
    assert ticks[-1] == (3, 3)


# ----------------------------------------------------------------------------- long tables


def test_guards_and_codegen_tables_show_50_rows_unless_all(llm, tmp_path):
    from typer.testing import CliRunner

    from tcinspect.cli import app

    runner = CliRunner()
    # hundreds of guards and kernels, many times the 50 rows shown: 282 guards in 3 layers, 352 kernels in 8
    for cmd, rep in (("guards", llm), ("codegen", llm_report.build(8))):
        saved = tmp_path / f"{cmd}.json"
        serialize.write_atomic(saved, serialize.dumps(rep, "json"))
        short = runner.invoke(app, [cmd, str(saved)], env={"COLUMNS": "200"})
        full = runner.invoke(app, [cmd, str(saved), "--all"], env={"COLUMNS": "200"})
        assert short.exit_code == full.exit_code == 0
        assert "more rows (use --all or --format yaml)" in short.stdout
        assert "more rows" not in full.stdout and full.stdout.count("\n") > 3 * short.stdout.count("\n")
