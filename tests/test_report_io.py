"""The report model and its YAML/JSON form: no torch needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from builders.reports import make_report
from tcinspect import outfile, serialize
from tcinspect.errors import ReportFormatError
from tcinspect.report import (
    SCHEMA_VERSION,
    AotGraphs,
    AotStage,
    DynamoGraph,
    DynamoStage,
    Graph,
    GraphBreak,
    Guard,
    InductorStage,
    Kernel,
    Node,
    OutputCode,
    Report,
    SourceLocation,
    Stages,
    Target,
)


def hand_built() -> Report:
    code = "class GraphModule(torch.nn.Module):\n    def forward(self, L_x_):\n        return (L_x_,)\n"
    graph = Graph("dynamo_output_graph", code, (Node("placeholder", "l_x_", "L_x_", dtype="f32", shape=("8", "s0")),
                                                Node("output", "output", "output", "l_x_")))
    brk = GraphBreak("0/0", SourceLocation("/p/m.py", 12, "forward", "print(x)"), "Failed to trace builtin operator",
                     "GB0059", explanation="print", hints=("remove it",))
    kern = Kernel(name="cpp_fused_relu_0", kind="cpp", language="cpp", source_nodes=("relu",), aten_ops=("aten.relu",),
                  user_lines=("/p/m.py:10",), launch="k(buf0)", buffers=("buf0: f32[8]",),
                  source='extern "C" void kernel() {\n}\n')
    return make_report(
        torch_version="2.13.0+cpu", device="cpu", target=Target(kind="model", path="m.py", sha256="ab"),
        stages=Stages(
            dynamo=DynamoStage("ok", "", (DynamoGraph("0/0", "forward", "/p/m.py", 3, graph,
                                                      (Guard("tensor", "TENSOR_MATCH", "L['x']", "check_tensor(...)"),)),),
                               (brk, brk)),
            aot_autograd=AotStage("ok", "", (AotGraphs("0/0", forward=graph),)),
            inductor=InductorStage("ok", "", (OutputCode("0/0", "0_forward", "forward", "# AOT ID: ['0_forward']\n", (kern,)),)),
        ),
        tcinspect_version="0.1.0", timings=(("capture_s", 1.5),),
    )


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_round_trip_is_lossless(fmt):
    rep = hand_built()
    again = serialize.loads(serialize.dumps(rep, fmt))
    assert again == rep
    assert again.timings == rep.timings


def test_summary_counts_and_distinct_breaks():
    s = hand_built().summary
    assert (s.graphs, s.graph_breaks, s.distinct_graph_breaks, s.guards, s.kernels, s.aot_graphs) == (1, 2, 1, 1, 1, 1)


def test_yaml_layout_summary_stages_block_scalars():
    text = serialize.dumps(hand_built(), "yaml")
    data = yaml.safe_load(text)
    assert list(data["summary"]) == ["graphs", "graph_breaks", "distinct_graph_breaks", "recompiles", "guards",
                                     "aot_graphs", "kernels", "compile_time_s", "cache_hits", "cache_misses"]
    assert all(isinstance(data["summary"][k], int) for k in ("graphs", "graph_breaks", "recompiles", "guards", "kernels"))
    assert set(data["stages"]) == {"dynamo", "aot_autograd", "inductor"}
    assert "code: |" in text  # multi-line code as a block scalar
    assert list(data).index("summary") < list(data).index("stages")


def test_no_timings_drops_the_timings_key():
    assert "timings" not in yaml.safe_load(serialize.dumps(hand_built(), "yaml", timings=False))


def test_other_schema_version_is_one_clear_error():
    data = serialize.to_dict(hand_built())
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ReportFormatError) as err:
        serialize.loads(json.dumps(data), name="r.json")
    assert "schema version" in err.value.cause and "re-run `tcinspect trace`" in err.value.fix


@pytest.mark.parametrize("text,needle", [
    ("schema_version: 1\nstages: [unclosed", "not valid YAML or JSON"),
    ("- just\n- a list\n", "not a tcinspect report"),
    ("name: something else\n", "not a tcinspect report"),
])
def test_foreign_or_truncated_files(text, needle):
    with pytest.raises(ReportFormatError) as err:
        serialize.loads(text, name="r.yaml")
    assert needle in err.value.cause and err.value.cause.startswith("r.yaml")


def test_a_file_that_is_not_utf8_is_refused_alike_read_or_handed_over(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_bytes(b"schema_version: 1\nname: caf\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(ReportFormatError) as read:
        serialize.load(p)
    with pytest.raises(ReportFormatError) as given:
        serialize.loads(p.read_bytes(), name=str(p))
    assert read.value.cause == given.value.cause == f"{p}: not UTF-8 text, so not a tcinspect report"
    assert read.value.fix == given.value.fix == "give a .yaml or .json report"


def test_hand_edited_wrong_type_names_the_key():
    data = serialize.to_dict(hand_built())
    data["stages"]["dynamo"]["graphs"][0]["line"] = "three"
    with pytest.raises(ReportFormatError) as err:
        serialize.loads(json.dumps(data))
    assert "report.stages.dynamo.graphs[0].line" in err.value.cause


def test_truncated_json_report(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(serialize.dumps(hand_built(), "json")[:200])
    with pytest.raises(ReportFormatError):
        serialize.load(p)


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "out.yaml"
    target.write_text("old\n")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(outfile.os, "replace", boom)
    with pytest.raises(OSError):
        serialize.write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]


def test_reading_a_report_does_not_import_torch(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(serialize.dumps(hand_built(), "yaml"))
    code = ("import sys; from tcinspect import serialize; r = serialize.load(sys.argv[1]); "
            "from tcinspect.render import table; table.trace(r); sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code, str(p)]).returncode == 0


def test_yaml_writer_reads_back_exactly_with_pyyaml():
    """The report's own YAML writer: any string (quotes, colons, YAML keywords, control and non-printable
    characters, line breaks YAML folds, code blocks) reads back unchanged with PyYAML's loader."""
    import yaml
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tcinspect.serialize import dump_data

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalars = st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none(),
                        st.sampled_from(["no", "null", "~", "y", "1e5", "0x1f", "- a", "a: b", "def f():\n    pass\n",
                                         "a\n\n", "\x85\u2028", "tail \nline"]))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                          max_leaves=20)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(values)
    def check(value):
        data = {"value": value}
        assert yaml.load(dump_data(data, "yaml"), Loader=loader) == data

    check()
