"""The shipped JSON Schema of a saved report: generated from the report types, it accepts every report
tcinspect writes (recorded ones, and fresh YAML/JSON of recorded traces, with and without timings) and
refuses what reading a report refuses. No torch."""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from helpers import recorded_report
from tcinspect import serialize
from tcinspect.cli import main
from tcinspect.serialize import schema

jsonschema = pytest.importorskip("jsonschema")  # the dev extra installs it (the reference implementation)
jsonschema_rs = pytest.importorskip("jsonschema_rs")  # and this one: the same draft, a hundred times faster

DATA = Path(__file__).resolve().parent / "data"
TRACES = [*sorted((DATA / "cpu-traces" / "2.13.0").glob("*.jsonl.gz")),
          DATA / "backend-failure-longformer-torch2.13.0-cpu.jsonl.gz", DATA / "cudagraphs" / "cpu_tensor-torch2.11.0.jsonl.gz",
          DATA / "compile-time-torch2.11.0-h100-default.jsonl.gz"]
LOGS = [DATA / "torch_trace" / "torch-2.13.0" / n for n in ("ddp_rank_branch", "collectives_gloo", "tiny.log.gz")]
SAVED = sorted(DATA.rglob("*.yaml.gz")) + sorted(DATA.rglob("*.live.json.gz"))


@cache
def validator() -> jsonschema.protocols.Validator:
    shipped = json.loads(schema.shipped())
    jsonschema.Draft202012Validator.check_schema(shipped)
    return jsonschema.Draft202012Validator(shipped)


@cache
def fast_validator() -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(json.loads(schema.shipped()))


def _errors(data: object) -> list[str]:
    """The reference implementation's errors, as it words them; the fast one must agree that there are some."""
    errors = [f"{e.json_path}: {e.message}" for e in validator().iter_errors(data)]
    assert fast_validator().is_valid(data) == (not errors)
    return errors


def _valid(data: object) -> bool:
    """Whole reports (megabytes) go to the fast implementation; its first error, if any, says where."""
    for error in fast_validator().iter_errors(data):
        raise AssertionError(f"{'.'.join(map(str, error.instance_path))}: {error.message}")
    return True


def test_the_shipped_file_is_the_one_the_types_generate():
    assert schema.shipped() == schema.text(schema.generate()), \
        "report.py changed: run `python -m tcinspect.serialize.schema` to write src/tcinspect/report.schema.json"


@pytest.mark.parametrize("path", TRACES + LOGS, ids=lambda p: p.name)
def test_fresh_reports_of_recorded_traces_are_valid(path):
    rep = recorded_report(path)
    read = [serialize.text.parse_text(serialize.dumps(rep, fmt)) for fmt in serialize.FORMATS]
    # where the formats read as the same data, types included (json's text tells 1, 1.0 and true apart), one
    # validation holds for every format
    same = len({json.dumps(d) for d in read}) == 1
    for data in read[:1] if same else read:
        assert _valid(data)
    # without timings (--no-timings), JSON: its YAML reads as the data written (test_serialize_paths), as JSON does
    quiet = serialize.text.parse_text(serialize.dumps(rep, "json", timings=False))
    assert quiet == serialize.to_dict(rep, timings=False) and _valid(quiet)


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_recorded_reports_are_valid(path):
    data = serialize.text.parse_text(gzip.decompress(path.read_bytes()).decode())
    assert _valid(data)


def _first_two(value):
    """The same report with every list of objects cut to its first two: still valid (the full one is validated
    above), and validated in a fiftieth of the time."""
    if isinstance(value, list):
        return [_first_two(v) for v in (value[:2] if value and all(isinstance(v, dict) for v in value) else value)]
    if isinstance(value, dict):
        return {k: _first_two(v) for k, v in value.items()}
    return value


def test_it_refuses_what_reading_refuses():
    good = _first_two(serialize.to_dict(recorded_report(LOGS[0])))
    assert len(good["ranks"]) == 2 and good["divergence"] and _errors(good) == []

    def damaged(change) -> list[str]:
        data = copy.deepcopy(good)
        change(data)
        return _errors(data)

    assert damaged(lambda d: d.__setitem__("colour", "red")) == \
        ["$: Additional properties are not allowed ('colour' was unexpected)"]
    assert damaged(lambda d: d["stages"]["dynamo"]["graphs"][0].pop("guards")) == \
        ["$.stages.dynamo.graphs[0]: 'guards' is a required property"]
    assert damaged(lambda d: d["summary"].__setitem__("graphs", "2")) == ["$.summary.graphs: '2' is not of type 'integer'"]
    assert damaged(lambda d: d.__setitem__("status", "fine")) == ["$.status: 'fine' is not one of ['ok', 'failed']"]
    assert damaged(lambda d: d["timings"].__setitem__("read_s", "fast")) == ["$.timings.read_s: 'fast' is not of type 'number'"]
    assert damaged(lambda d: d["ranks"][1].pop("summary")) == ["$.ranks[1]: 'summary' is a required property"]
    assert damaged(lambda d: d.pop("summary")) == ["$: 'summary' is a required property"]
    assert damaged(lambda d: d.__setitem__("schema_version", 2)) == ["$.schema_version: 1 was expected"]
    # what a report may lack: an optional section, a key added to schema 1, a *_time_s key (--no-timings)
    assert damaged(lambda d: [d.pop(k) for k in ("ranks", "divergence", "timings", "compile_time")]) == []
    assert damaged(lambda d: d["stages"]["dynamo"]["graph_breaks"][0].pop("model_frame", None)) == []
    assert damaged(lambda d: d["compiles"][0].pop("entire_frame_compile_time_s")) == []


def test_the_command_prints_the_shipped_schema(capsys):
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert out == schema.shipped() and json.loads(out)["$ref"] == "#/$defs/Report"
