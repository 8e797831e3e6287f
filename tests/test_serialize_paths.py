"""The fast paths of reading and writing reports give exactly what the reference paths give: JSON written
by orjson is ``json``'s text byte for byte (or ``json`` writes it), YAML in the emitter's style read without
PyYAML is what PyYAML reads, any other YAML goes to PyYAML; and the report carries its ranks' divergence.
No torch: recorded traces and hand-built data only."""

from __future__ import annotations

import gzip
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import recorded_report
from tcinspect import serialize
from tcinspect.report import Report, TensorCheck, Verification
from tcinspect.serialize import floats, json_text, yaml_read

DATA = Path(__file__).resolve().parent / "data"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: recorded event files of every kind (CPU torch 2.13-2.15, GPU, Inductor failures, CUDA graphs, compile time)
EVENT_FILES = sorted((DATA / "cpu-traces" / "2.13.0").glob("*.jsonl.gz")) + sorted(
    DATA / n for n in ("gpu-trace-torch2.11-h200.jsonl.gz", "gpu-trace-transformer-layer.jsonl.gz",
                       "backend-failure-longformer-torch2.13.0-cpu.jsonl.gz", "provenance-gpt2-torch2.13.0-cpu.jsonl.gz",
                       "compile-time-torch2.11.0-h100-default.jsonl.gz", "cudagraphs/cpu_tensor-torch2.11.0.jsonl.gz"))
#: TORCH_TRACE directories of distributed runs: reports with ranks and divergences
RANK_DIRS = [DATA / "torch_trace" / "torch-2.13.0" / n for n in ("ddp_rank_branch", "collectives_gloo")]
#: reports saved by tcinspect and kept in tests/data
SAVED = sorted(DATA.rglob("*.yaml.gz")) + sorted(DATA.rglob("*.live.json.gz"))


def recorded(name: str) -> Report:
    return recorded_report(DATA / name)


REPORTS = [str(p.relative_to(DATA)) for p in EVENT_FILES + RANK_DIRS]


def _same(a, b) -> bool:
    """Equal, types included (1 is not 1.0 nor True), NaN equal to NaN, keys in the same order: for plain data
    (dicts, lists, str, int, float, bool, None) that is equal ``repr`` (floats' reprs round-trip exactly; -0.0 is
    not 0.0)."""
    return repr(a) == repr(b)


def test_same_tells_apart_what_equality_does_not():
    assert _same({"a": [1, 1.5, None, "x"], "n": math.nan}, {"a": [1, 1.5, None, "x"], "n": float("nan")})
    for a, b in ((1, 1.0), (1, True), (0.0, -0.0), ([1], (1,)), ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ("1", 1),
                 ({"k": [0]}, {"k": [False]})):
        assert not _same(a, b), (a, b)


# ----------------------------------------------------------------------------- JSON: orjson, byte for byte


@pytest.mark.parametrize("name", REPORTS)
def test_json_of_a_recorded_report_is_jsons_text_and_takes_the_orjson_path(name):
    rep = recorded(name)
    assert floats.kind(rep) in (json_text.ORDINARY, json_text.UNUSUAL)  # orjson writes it (no NaN)
    # each value of each flag once: --no-timings changes the data, --compact only how it is written
    for timings, compact in ((True, False), (False, True)):
        data = serialize.to_dict(rep, timings=timings)
        assert serialize.dumps(rep, "json", timings=timings, compact=compact) == \
            json_text.stdlib_dumps(data, compact=compact) == json_text.dumps(data, compact=compact)


def test_special_floats_are_written_as_json_writes_them():
    """NaN and infinities as NaN/Infinity (what tcinspect's JSON always held), tiny and huge floats as repr."""
    data = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "tiny": 1e-05, "small": 5e-05, "huge": 1e16,
            "ok": 0.5, "big": 2**70, "keys": {1: "int key"}}
    for compact in (False, True):
        assert json_text.dumps(data, compact=compact) == json_text.stdlib_dumps(data, compact=compact)
    assert '"nan": NaN' in json_text.dumps(data) and '"tiny": 1e-05' in json_text.dumps(data)
    # a NaN deep in a report (a verify tolerance) sends the report to json: its text is json's
    check = TensorCheck(name="out", shape=(2,), dtype="float32", max_abs_error=math.nan, max_rel_error=math.inf,
                        rtol=1e-05, atol=1e-08, ok=False)
    rep = recorded(REPORTS[0]).replace(verification=Verification(ok=False, tensors=(check,)))
    assert floats.kind(rep) == json_text.SPECIAL
    text = serialize.dumps(rep, "json")
    assert text == json_text.stdlib_dumps(serialize.to_dict(rep)) and '"max_abs_error": NaN' in text
    # a float orjson writes in its own notation (a phase of 20 µs) is rewritten as json writes it
    tiny = recorded(REPORTS[0]).replace(timings=(("tiny_s", 2e-05), ("huge_s", 1e16)))
    assert floats.kind(tiny) == json_text.UNUSUAL
    assert '"tiny_s": 2e-05' in serialize.dumps(tiny, "json") and '"huge_s": 1e+16' in serialize.dumps(tiny, "json")
    assert floats.kind(recorded(REPORTS[0])) == json_text.ORDINARY


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.recursive(st.one_of(st.text(max_size=20), st.integers(min_value=-2**70, max_value=2**70), st.floats(),
                              st.booleans(), st.none()),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=25))
def test_any_plain_data_is_written_as_json_writes_it(value):
    for compact in (False, True):
        assert json_text.dumps(value, compact=compact) == json_text.stdlib_dumps(value, compact=compact)


# ----------------------------------------------------------------------------- YAML: the emitter's own reader


@pytest.mark.parametrize("name", REPORTS)
def test_yaml_of_a_recorded_report_reads_as_pyyaml_reads_it_the_line_scan_alone_too(name):
    text = serialize.dumps(recorded(name), "yaml")
    reference = yaml.load(text, Loader=LOADER)
    assert _same(yaml_read.parse(text), reference)
    # the line scan (parse's fast path) reads every recorded report itself, without the recursive reader
    scanned = _scanned(text)
    assert scanned is not None and _same(scanned, reference)
    # without timings (--no-timings): what was written is what is read (PyYAML's reading of the same emitter's
    # text is the reference above; a second PyYAML load of a few MB would double the test's time)
    text = serialize.dumps(recorded(name), "yaml", timings=False)
    written = serialize.to_dict(recorded(name), timings=False)
    assert _same(yaml_read.parse(text), written)
    assert _same(_scanned(text), written)


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_saved_reports_read_back_the_same_either_way(path):
    rep = serialize.loads(gzip.decompress(path.read_bytes()).decode())
    text = serialize.dumps(rep, "yaml")
    assert _same(yaml_read.parse(text), yaml.load(text, Loader=LOADER))
    assert serialize.loads(text) == rep


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.recursive(
    st.one_of(st.text(max_size=30), st.integers(), st.floats(), st.booleans(), st.none(),
              st.sampled_from(["no", "Null", "~", "y", "1e5", "0x1f", "017", "- a", "a: b", "[x]", "|", "#c", "a, b",
                               "def f():\n    pass\n", "a\n\n", "\n\nb", "x\n", "\x85\u2028", "tail \nline", "é", ".nan"])),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20))
def test_any_emitted_data_reads_as_pyyaml_reads_it(value):
    text = serialize.dump_data({"value": value, "more": [value, {"k": value}]}, "yaml")
    expected = yaml.load(text, Loader=LOADER)
    try:
        got = yaml_read.parse(text)
    except yaml_read.NotOurs:
        got = None  # allowed (the text goes to PyYAML), but the emitter's output should be ours
    assert got is not None and _same(got, expected)


@pytest.mark.parametrize("text", [
    "a: 1  # a comment\n",
    "a:\n- 1\n- 2\n",  # a sequence at its key's indent
    "a: &x 1\nb: *x\n",  # an anchor
    "a: 1\nb:\n",  # a null by omission
    "a: plain\n  continued\n",  # a plain scalar on two lines
    "a: \"two\n  lines\"\n",
    "a: 'single'\n",
    "a: !!str 1\n",
    "a: 1\r\nb: 2\r\n",
    "a:\tb\n",
    "a: |2\n   x\n",
    "a: 0o17\n",
    "a: 1_000\n",
    "a: Yes\n",
    "{a: 1}\n",
    "a: [1, [2]]\n",
    "a: \"\\ud83d\\ude00\"\n",  # an escaped surrogate pair: YAML and JSON decode it differently
    "--- \na: 1\n",
])
def test_other_yaml_is_left_to_pyyaml_and_read_as_pyyaml_reads_it(text):
    with pytest.raises(yaml_read.NotOurs):
        yaml_read.parse(text)
    try:
        expected = yaml.load(text, Loader=LOADER)
    except yaml.YAMLError:
        return
    assert _same(serialize.text.parse_text(text), expected)


def test_a_repeated_key_keeps_its_place_and_its_last_value_as_pyyaml_does():
    text = "a: 1\nb: 2\na: 3\n"
    assert list(yaml_read.parse(text).items()) == list(yaml.load(text, Loader=LOADER).items()) == [("a", 3), ("b", 2)]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_the_byte_scan_finds_what_the_character_class_finds(text):
    assert yaml_read._foreign(text) == (yaml_read._FOREIGN.search(text) is not None)


# ----------------------------------------------------------------------------- the report's divergence


def test_a_merged_report_carries_its_divergence_and_reads_it_back():
    from tcinspect.analysis import divergence
    from tcinspect.derived.divergence import divergences

    rep = recorded(str(RANK_DIRS[0].relative_to(DATA)))
    assert rep.divergence and rep.divergence == divergences(rep.ranks)
    for fmt in serialize.FORMATS:
        back = serialize.loads(serialize.dumps(rep, fmt))
        assert back.divergence == rep.divergence
    assert divergence.rank_report(rep, rep.ranks[1]).divergence == ()


def test_writing_a_distributed_report_imports_no_analysis(tmp_path):
    p = tmp_path / "ranks.yaml"
    p.write_text(serialize.dumps(recorded(str(RANK_DIRS[0].relative_to(DATA))), "yaml"))
    code = ("import sys; from tcinspect import serialize; r = serialize.load(sys.argv[1]); "
            "serialize.dumps(r, 'yaml'); serialize.dumps(r, 'json'); "
            "print(sorted(m for m in sys.modules if m.startswith(('tcinspect.analysis', 'tcinspect.render', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- YAML: the line scan, plain data


def _scanned(text: str):
    """What the line scan (``parse``'s fast path) reads, or None where it leaves the text to the recursive reader."""
    try:
        return yaml_read._scan(text.split("\n")[:-1])
    except (yaml_read._Unusual, yaml_read.NotOurs, IndexError, ValueError):
        return None


def test_the_line_scan_reads_a_large_generated_report_as_pyyaml_does():
    from builders.llm_report import build

    text = serialize.dumps(build(2), "yaml")
    got = _scanned(text)
    assert got is not None and _same(got, yaml.load(text, Loader=LOADER))
    assert _same(_scanned(text), got)  # again, every line now known: the same data


#: strings a YAML reader may take for something else: control characters, quotes, colons, leading and trailing
#: spaces, YAML 1.1's booleans and nulls, numbers in YAML's other notations, unicode, JSON's and YAML's escapes
_TRICKY = st.one_of(
    st.text(alphabet=st.sampled_from(list("\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f\x7f\x85\xa0\u2028\u2029\ufeff"
                                          "\ufffe'\":#-? ,[]{}|>&*!%@`\\/aZ09é€😀")), max_size=12),
    st.sampled_from(["null", "Null", "NULL", "~", "yes", "Yes", "YES", "no", "on", "Off", "y", "N", "true", "True",
                     "false", "1", "-1", "007", "1.5", "-0.0", "1e5", "1.0e+05", "0x1f", "0o17", "1_000", "1:30",
                     ".nan", ".NaN", ".inf", "-.inf", "+1", "", " ", " a", "a ", "a: b", "a:b", "- a", "-", "[a]",
                     "{a: 1}", "|", "|-", ">", "&a", "*a", "!t", "%x", "@x", "`x", "a #b", "#", "\\u00e9", "\\",
                     '"', "'", "\\ud83d\\ude00", "a\n", "\na", "a\n\n", " a\nb", "a\n b\n", "a\r\nb"]),
)
_SCALAR = st.one_of(_TRICKY, st.integers(min_value=-2**80, max_value=2**80), st.floats(), st.booleans(), st.none())


def _nested(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of scalars (flow, or block from 17 items) and of mappings, and mappings: a list directly in a list
    is left to the recursive reader (the test below), so it is not made here."""
    mappings = st.dictionaries(_TRICKY, inner, min_size=1, max_size=3)
    return st.one_of(st.lists(_SCALAR, max_size=3), st.lists(_SCALAR, min_size=17, max_size=20),
                     st.dictionaries(_TRICKY, inner, max_size=4), st.lists(mappings, max_size=3))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.recursive(_SCALAR, _nested, max_leaves=30))
def test_tricky_strings_and_numbers_read_back_as_pyyaml_reads_them(value):
    text = serialize.dump_data({"value": value, "same": value, "items": [{"k": value, "n": 1}, {"v": value}]}, "yaml")
    expected = yaml.load(text, Loader=LOADER)
    assert _same(yaml_read.parse(text), expected)
    scanned = _scanned(text)
    assert scanned is None or _same(scanned, expected)


def test_a_line_met_again_gives_new_collections_and_the_same_scalars():
    text = "a: []\nb: {}\nc:\n  - []\n  - x\n  - k: []\nd: []\n"
    first = yaml_read.parse(text)
    assert first == {"a": [], "b": {}, "c": [[], "x", {"k": []}], "d": []} and first["a"] is not first["d"]
    first["a"].append(1)
    first["c"][2]["k"].append(1)
    assert yaml_read.parse(text) == {"a": [], "b": {}, "c": [[], "x", {"k": []}], "d": []}


@pytest.mark.parametrize(("value", "scanned"), [
    ({"a": [[{"k": 1}]]}, False),  # a sequence in a sequence: a lone dash
    ({"k: v": 1}, False),  # a quoted key holding ": "
    ({"x": {"k: v": {"b": 1}}}, False),  # a quoted key opening a mapping
    ({"a": ["x: y"] * 17}, True),  # a quoted item holding ": "
    ({"a": [["p", "q: r"]] * 2}, True),  # a flow holding ": "
    ({"a": [{"k: v": 1}]}, False),  # an item mapping whose quoted key holds ": "
])
def test_lines_the_scan_leaves_are_read_by_the_recursive_reader(value, scanned):
    text = serialize.dump_data(value, "yaml")
    assert (_scanned(text) == value) if scanned else (_scanned(text) is None)
    assert _same(yaml_read.parse(text), yaml.load(text, Loader=LOADER)) and yaml_read.parse(text) == value


def _walked(value):
    """Plain data the way it was made before ``mapping`` generated a function per class: value by value."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _walked(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_walked(v) for v in value]
    return value


@pytest.mark.parametrize("name", REPORTS)
def test_plain_data_of_a_recorded_report_is_what_the_value_by_value_walk_gives(name):
    rep = recorded(name)
    assert _same(serialize.plain(rep), _walked(rep))
