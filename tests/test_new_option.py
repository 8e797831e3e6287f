"""A new compile option is one field: added to ``CompileFields`` in a copy of the package, it reaches the request,
the child's JSON, the report's record, the cache key and the schema, and reports saved before it still load.

The other rules that make this so are checked here on the real classes: an option added since schema 1 may be
absent from a saved report, is keyed only when set, and ``Options.dynamic`` holds only torch's words."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders.reports import make_report
from tcinspect import cache, serialize
from tcinspect.errors import ReportFormatError
from tcinspect.report import CompileFields, CompileOptions, Options
from tcinspect.serialize.rules import OPTIONS_OF_SCHEMA_1

_SRC = Path(__file__).resolve().parent.parent / "src" / "tcinspect"

#: run in a copy of the package whose CompileFields has one more field, ``probe``, and nothing else changed
_PROBE = r'''
import dataclasses, json
from tcinspect import cache, serialize
from tcinspect.report import CompileOptions, Options, Report, Request, Target
from tcinspect.serialize import schema

req = Request(file="m.py", compile=CompileOptions(probe=True))
assert req.options.probe is True and req.options.compile == req.compile
assert Request.from_json(req.to_json()) == req  # the capture's child and every rank get it
saved = json.loads(serialize.dumps(Report(torch_version="2.13.0", device="cpu", target=Target(kind="model", path="m.py")), "json"))
assert saved["options"]["probe"] is False
del saved["options"]["probe"]  # a report saved before the option existed
assert serialize.loads(json.dumps(saved)).options == Options()
assert "probe" not in cache.keyed_options(Options())  # a capture that does not use it keeps its key
assert cache.keyed_options(Options(probe=True))["probe"] is True
options = schema.generate()["$defs"]["Options"]
assert options["properties"]["probe"] == {"type": "boolean"} and "probe" not in options["required"]
print("one field")
'''


def test_a_new_compile_option_is_one_field_in_compile_fields(tmp_path):
    pkg = tmp_path / "tcinspect"
    shutil.copytree(_SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    model = pkg / "report" / "options.py"
    text = model.read_text()
    last = "    passes: tuple[str, ...] = ()\n"
    assert text.count(last) == 1  # the last field of CompileFields
    model.write_text(text.replace(last, last + "    probe: bool = False\n"))
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "one field"


def test_the_request_and_the_record_share_every_compile_field():
    names = [f.name for f in dataclasses.fields(CompileFields)]
    assert [f.name for f in dataclasses.fields(CompileOptions)] == names
    assert [f.name for f in dataclasses.fields(Options)][:len(names)] == names
    asked = CompileOptions(backend="aot_eager", mode="max-autotune", fullgraph=True, dynamic="true", backward=False,
                           device="cpu", passes=("p.py:f",))
    assert Options.of(asked).compile == asked


def _saved(options: Options) -> dict:
    return json.loads(serialize.dumps(make_report(options=options), "json"))


def test_an_option_added_since_schema_1_may_be_absent_and_an_original_one_may_not():
    later = [f.name for f in dataclasses.fields(Options) if f.name not in OPTIONS_OF_SCHEMA_1]
    assert later  # try_mode, per_call, measure_memory at least
    saved = _saved(Options())
    for name in later:
        del saved["options"][name]
    assert serialize.loads(json.dumps(saved)).options == Options()
    for name in sorted(OPTIONS_OF_SCHEMA_1):
        damaged = _saved(Options())
        del damaged["options"][name]
        with pytest.raises(ReportFormatError, match=f"missing key 'report.options.{name}'"):
            serialize.loads(json.dumps(damaged))


def test_an_option_added_since_the_key_took_its_form_is_keyed_only_when_set():
    keyed = set(cache.keyed_options(Options()))
    for f in dataclasses.fields(Options):
        if f.name not in keyed:
            assert f.name not in cache._KEYED_AT_DEFAULT
    assert "measure_memory" not in keyed
    assert cache.keyed_options(Options(measure_memory=True))["measure_memory"] is True


@pytest.mark.parametrize("value", ["maybe", True, 1, None])
def test_a_saved_dynamic_is_one_of_torchs_words(value):
    saved = _saved(Options(dynamic="true"))
    assert serialize.loads(json.dumps(saved)).options.dynamic == "true"
    saved["options"]["dynamic"] = value
    with pytest.raises(ReportFormatError, match=r"'report\.options\.dynamic' should be one of '', 'true', 'false'"):
        serialize.loads(json.dumps(saved))
