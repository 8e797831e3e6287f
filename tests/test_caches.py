"""The compile caches: tcinspect reports the user's own cache (its hits and misses, its warm time), writes no
entry the user's run would not, keeps kernel provenance exact, and names why a look-up missed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from builders.reports import make_report
from tcinspect.analysis import caches
from tcinspect.derived import cachekeys
from tcinspect.parse import provenance
from tcinspect.parse.compile_time import key_components
from tcinspect.report import (
    CacheKeyComponent,
    CacheLookup,
    CompileMetrics,
    CompileTime,
    CompileTiming,
    Graph,
    Kernel,
    Node,
    RankReport,
    Target,
)

MODELS = Path(__file__).parent / "models"

# ----------------------------------------------------------------------------- pure


def _lookup(state: str, **hashes: str) -> CacheLookup:
    comps = tuple(CacheKeyComponent(n, h, f"value-{h}") for n, h in hashes.items())
    return CacheLookup("fx_graph", "forward", state, key="k" + "".join(hashes.values()), components=comps)


def test_a_report_is_reused_only_while_the_users_inductor_cache_is_as_it_was(tmp_path, monkeypatch) -> None:
    """The cache outcomes a report holds are the user's only while their Inductor cache holds what it held: an
    entry saved for a key that missed, one removed after a hit, or another cache directory make it stale."""
    from tcinspect import cache

    inductor = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "tcinspect"))
    model = tmp_path / "m.py"
    model.write_text("model = None\n")
    hit_entry = inductor / "aotautograd" / "ahit" / "entry"
    hit_entry.parent.mkdir(parents=True)
    hit_entry.write_text("x")
    miss = CacheLookup("fx_graph", "forward", "miss", key="fmissing0000")
    hit = CacheLookup("aot_autograd", "", "hit", key="ahit")
    rep = make_report(torch_version="2.13.0", device="cpu", target=Target(kind="model", path=str(model)),
                      compile_time=CompileTime((_timing("0/0", miss, hit),)))
    assert cache.store(model, "k1", rep) is not None
    assert cache.lookup(model, ["k1"]) is not None  # nothing changed
    # the user's own run saves the entry that missed: a capture now would hit
    saved = inductor / "fxgraph" / "mi" / "fmissing0000" / "variant"
    saved.parent.mkdir(parents=True)
    saved.write_text("x")
    assert cache.stale_inductor_cache(json.loads(next((tmp_path / "tcinspect").glob("m-*.json")).read_text())
                                      [cache.INDUCTOR_KEY]) == ["fx_graph fmissing0000 (miss when captured)"]
    assert cache.lookup(model, ["k1"]) is None
    saved.unlink()
    assert cache.lookup(model, ["k1"]) is not None
    hit_entry.unlink()  # the cache was cleared: what hit would miss
    assert cache.lookup(model, ["k1"]) is None
    hit_entry.write_text("x")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache.lookup(model, ["k1"]) is None


def test_inductor_cache_root_follows_torch_without_importing_it(monkeypatch, tmp_path) -> None:
    import getpass
    import tempfile

    from tcinspect import cache

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "c"))
    assert cache.inductor_cache_root() == tmp_path / "c"
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert cache.inductor_cache_root() == Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"


def test_key_components_read_torch_list() -> None:
    got = key_components(["[abc] gm: GraphModule()\n\ndef forward(self):", "[d1] inductor_config[size_asserts]: True",
                          "no brackets", 3])
    assert [(c.name, c.hash) for c in got] == [("gm", "abc"), ("inductor_config[size_asserts]", "d1")]
    assert got[1].value == "True"


def test_changed_components_name_the_component() -> None:
    before, after = _lookup("hit", gm="a", **{"inductor_config[x]": "b"}), _lookup("miss", gm="a", **{"inductor_config[x]": "c"})
    assert cachekeys.changed_components(before, after) == ("inductor_config[x]: value-b → value-c",)
    added = _lookup("miss", gm="a", **{"inductor_config[x]": "b", "default_dtype": "z"})
    assert cachekeys.changed_components(before, added) == ("default_dtype: (absent) → value-z",)


def test_explanation_of_an_unchanged_key_says_the_entry_is_absent() -> None:
    c = CacheLookup("fx_graph", "forward", "miss", compared_with="the last run")
    assert "not in this cache directory" in caches.explanation(c)
    assert caches.explanation(CacheLookup("fx_graph", "forward", "bypass", reason="Unsupported call")) == "Unsupported call"


def test_untracked_code_keys_the_record_and_launches_give_handles() -> None:
    tracked = "def call(args):\n    # [Provenance debug handles] cpp_fused_0:1\n    cpp_fused_0(buf0)\n"
    assert provenance.untracked(tracked) == "def call(args):\n    cpp_fused_0(buf0)\n"
    st = provenance.Statement()
    provenance.add_event(st, provenance.OWN, json.dumps({"kernels": {"cpp_fused_0:1": ["add"]}, "modules": {},
                                                        "launches": [["cpp_fused_0", "cpp_fused_0:1"]]}))
    k = Kernel(name="cpp_fused_0", kind="cpp", language="cpp", source_nodes=(), aten_ops=(), user_lines=(), launch="")
    graph = Graph("inductor_post_grad_graph", "", (Node("call_function", "add", "torch.ops.aten.add.Tensor"),))
    (got,) = provenance.apply((k,), st, graph)
    assert got.provenance == provenance.INDUCTOR and got.source_nodes == ("add",)
    other = Graph("inductor_post_grad_graph", "", (Node("call_function", "mul", "torch.ops.aten.mul.Tensor"),))
    (kept,) = provenance.apply((k,), st, other)  # the record names a node this graph lacks: not used
    assert kept.provenance == provenance.UNKNOWN
    provenance.add_event(st2 := provenance.Statement(), provenance.STACK_TRACES, "")
    assert not st2.malformed  # an untracked entry logs no payload: not a malformed artifact


def test_a_renamed_backward_graph_keeps_its_record() -> None:
    """The same post-grad graph with other node names (an untracked compile's): the record holds node for node."""
    record = {"kernels": {"cpp_fused_0:1": ["mul_3"]}, "modules": {}, "post_to_pre": {"mul_3": ["mul"]},
              "launches": [["cpp_fused_0", "cpp_fused_0:1"]],
              "post_grad": [["x", "", ""], ["mul_3", "torch.ops.aten.mul.Tensor", "(x, x)"]]}
    st = provenance.Statement()
    provenance.add_event(st, provenance.OWN, json.dumps(record))
    k = Kernel(name="cpp_fused_0", kind="cpp", language="cpp", source_nodes=(), aten_ops=(), user_lines=(), launch="")
    graph = Graph("inductor_post_grad_graph", "", (Node("placeholder", "x"),
                                                    Node("call_function", "mul", "torch.ops.aten.mul.Tensor", "(x, x)")))
    (got,) = provenance.apply((k,), st, graph)
    assert got.provenance == provenance.INDUCTOR and got.source_nodes == ("mul",) and got.dynamo_nodes == ("mul",)
    # another graph (another argument): not the same graph, the record is not used
    other = Graph("inductor_post_grad_graph", "", (Node("placeholder", "x"),
                                                    Node("call_function", "mul", "torch.ops.aten.mul.Tensor", "(x, 2)")))
    (kept,) = provenance.apply((k,), st, other)
    assert kept.provenance == provenance.UNKNOWN


def _timing(cid: str, *lookups: CacheLookup) -> CompileTiming:
    return CompileTiming(cid, "forward", caches=lookups)


def test_ranks_that_miss_differently_name_the_component() -> None:
    from tcinspect.derived import divergence

    hit = _lookup("hit", gm="a", **{"inductor_config[x]": "b"})
    miss = _lookup("miss", gm="a", **{"inductor_config[x]": "c"})
    same_key_miss = replace(hit, state="miss")

    def rank(n: int, aot: str, c: CacheLookup) -> RankReport:
        return RankReport(rank=n, status="ok", compiles=(CompileMetrics("0/0", aot_autograd_cache=aot),),
                          compile_time=CompileTime((_timing("0/0", c),)))

    (d,) = divergence.divergences([rank(0, "hit", hit), rank(1, "miss", miss), rank(2, "miss", same_key_miss),
                                   rank(3, "hit", hit)])
    assert d.aspect == "cache" and [g.ranks for g in d.groups] == [(0, 3), (1, 2)]
    assert d.groups[0].value == "AOTAutograd cache hit"  # the ranks that hit: nothing to explain
    assert "key differs from rank 0's (hit): inductor_config[x]: value-b → value-c" in d.groups[1].value
    (d,) = divergence.divergences([rank(0, "hit", hit), rank(2, "miss", same_key_miss)])
    assert "same key as rank 0 (hit); the entry was not in this rank's cache directory" in d.groups[1].value


def test_html_shows_each_cache_lookup() -> None:
    from tcinspect.render import html

    hit = _lookup("hit", gm="a")
    miss = replace(_lookup("miss", gm="b"), changed=("gm: value-a → value-b",), compared_with="the last run",
                   cost_s=1.25)
    bypass = CacheLookup("fx_graph", "backward", "bypass", reason="Can't cache HigherOrderOperator: cond")
    rep = make_report(torch_version="2.13.0", device="cpu", target=Target(kind="file", path="m.py"),
                      compile_time=CompileTime((_timing("0/0", hit), _timing("1/0", miss, bypass))))
    page = html.render(rep)
    section = page[page.index('<section id="caches">'):]
    assert "1 bypass · 1 hit · 1 miss · a warm start would save 1.25 s" in section
    assert "gm: value-a → value-b" in section and "Can&#x27;t cache HigherOrderOperator: cond" in section
    assert html.render(replace(rep, compile_time=None)).count('id="caches"') == 0


# ----------------------------------------------------------------------------- the user's cache, for real

PLAIN = """
import json, runpy, sys, time
import torch
from torch._dynamo.utils import counters
ns = runpy.run_path(sys.argv[1])
start = time.perf_counter()
out = torch.compile(ns["model"])(*ns["example_inputs"])
(out if out.dim() == 0 else out.sum()).backward()
print(json.dumps({"s": time.perf_counter() - start, "fx": dict(counters["inductor"]),
                  "aot": dict(counters["aot_autograd"])}))
"""


def _plain_run(model: Path, cache_dir: Path) -> dict:
    """The user's own run: a plain script in a fresh process, torch's counters as it ends."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache_dir), INDUCTOR_PROVENANCE="0")
    out = subprocess.run([sys.executable, "-c", PLAIN, str(model)], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _counts(rep, cache: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, c in cachekeys.lookups(rep.compile_time):
        if c.cache == cache:
            out[c.state] = out.get(c.state, 0) + 1
    return out


def _entries(cache_dir: Path) -> set[str]:
    return {str(p.relative_to(cache_dir)) for sub in ("fxgraph", "aotautograd") if (cache_dir / sub).exists()
            for p in (cache_dir / sub).rglob("*") if p.is_file()}


@pytest.mark.slow
def test_compile_time_answers_for_the_cache_the_users_runs_left(capsys, tmp_path, monkeypatch):
    """tcinspect cold (every look-up misses), then the user's own plain runs fill the cache: the same command is
    asked again and answers for the cache as it is now (hits), not from its report of the cold one."""
    from helpers import SAMPLES, cli
    from tcinspect.capturing._compat.caches import inductor_cache_dir

    inductor = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    monkeypatch.setenv("INDUCTOR_PROVENANCE", "0")
    model = SAMPLES / "gelu_linear.py"
    with torch_provenance_level(0):
        code, out, err = cli(capsys, "compile-time", str(model), "-f", "json")
        assert code == 0, err
        cold = json.loads(out)
        states = {c["state"] for t in cold["compiles"] for c in t["caches"] if c["cache"] == "fx_graph"}
        assert states == {"miss"}
        code, out, err = cli(capsys, "compile-time", str(model), "-f", "json")  # nothing changed: reused
        assert code == 0 and "reusing the current report" in err
        _plain_run(model, inductor)
        code, out, err = cli(capsys, "compile-time", str(model), "-f", "json")
        assert code == 0 and "reusing" not in err, err
        warm = json.loads(out)
        states = {c["state"] for t in warm["compiles"] for c in t["caches"] if c["cache"] == "fx_graph"}
        assert states == {"hit"}
        assert str(inductor) == inductor_cache_dir()


class torch_provenance_level:
    """Inductor's provenance tracking level for the block (the default user's is 0), restored after."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> None:
        from torch._inductor import config

        self.old = config.trace.provenance_tracking_level
        config.trace.provenance_tracking_level = self.level

    def __exit__(self, *exc: object) -> None:
        from torch._inductor import config

        config.trace.provenance_tracking_level = self.old


@pytest.fixture(scope="module")
def gpt2_cache_runs(tmp_path_factory):
    """tcinspect cold, then the user's plain run, then tcinspect warm, all on one TORCHINDUCTOR_CACHE_DIR."""
    from torch._dynamo.utils import counters
    from torch._inductor import config as inductor_config

    from tcinspect.capturing.engine import capture_file

    cache_dir = tmp_path_factory.mktemp("inductor-cache")
    model = MODELS / "gpt2_train_tiny.py"
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    old_level = inductor_config.trace.provenance_tracking_level
    inductor_config.trace.provenance_tracking_level = 0  # the default user: no provenance tracking
    try:
        def captured():
            counters.clear()
            rep = capture_file(model, quiet=True)
            return rep, {"fx": dict(counters["inductor"]), "aot": dict(counters["aot_autograd"])}

        cold, cold_counters = captured()
        after_cold = _entries(cache_dir)
        plain_cold = _plain_run(model, cache_dir)
        warm, warm_counters = captured()
        plain_warm = _plain_run(model, cache_dir)
    finally:
        inductor_config.trace.provenance_tracking_level = old_level
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old
    return dict(cold=cold, cold_counters=cold_counters, after_cold=after_cold, plain_cold=plain_cold, warm=warm,
                warm_counters=warm_counters, plain_warm=plain_warm, cache_dir=cache_dir)


def _torch_counts(counted: dict) -> tuple[dict[str, int], dict[str, int]]:
    fx = {s: counted["fx"].get(f"fxgraph_cache_{s}", 0) for s in ("hit", "miss", "bypass")}
    aot = {s: counted["aot"].get(f"autograd_cache_{s}", 0) for s in ("hit", "miss", "bypass")}
    return {k: v for k, v in fx.items() if v}, {k: v for k, v in aot.items() if v}


@pytest.mark.slow
def test_cold_capture_reports_torch_counters_and_writes_no_entry(gpt2_cache_runs) -> None:
    r = gpt2_cache_runs
    fx, aot = _torch_counts(r["cold_counters"])
    assert fx.get("miss", 0) >= 2 and not fx.get("hit")  # forward and backward
    assert _counts(r["cold"], "fx_graph") == fx
    assert _counts(r["cold"], "aot_autograd") == aot
    assert r["after_cold"] == set()  # no FX graph or AOTAutograd entry written
    # so the user's own run after it is as cold as before: the same misses
    assert _torch_counts(r["plain_cold"]) == (fx, aot)
    tracked = [p for p in Path(r["cache_dir"]).rglob("*.py") if provenance.HANDLE_MARK in p.read_text(errors="replace")]
    assert tracked == []  # the tracked output code removed


@pytest.mark.slow
def test_warm_capture_reports_the_users_hits_with_exact_provenance(gpt2_cache_runs) -> None:
    r = gpt2_cache_runs
    fx, aot = _torch_counts(r["warm_counters"])
    assert fx.get("hit", 0) >= 2 and not fx.get("miss")
    assert _counts(r["warm"], "fx_graph") == fx and _counts(r["warm"], "aot_autograd") == aot
    assert _torch_counts(r["plain_warm"]) == (fx, aot)  # what the user's own warm run sees
    assert {o.part for o in r["warm"].stages.inductor.outputs} >= {"forward", "backward"}
    assert all(o.cache == "hit" for o in r["warm"].stages.inductor.outputs)

    def provenance_of(rep, part):
        return [(k.name, k.provenance, k.source_nodes, k.dynamo_nodes, k.frames)
                for o in rep.stages.inductor.outputs if o.part == part for k in o.kernels]

    # the kernels, loaded from the entries the user's untracked run saved, keep the provenance tcinspect
    # recorded when it saw them compiled: the forward's, and the backward's (whose tracked compile named
    # its post-grad nodes differently: the record is carried over node for node)
    for part in ("forward", "backward"):
        assert provenance_of(r["warm"], part) == provenance_of(r["cold"], part), part
        assert all(k[1] == provenance.INDUCTOR for k in provenance_of(r["warm"], part)), part


# ----------------------------------------------------------------------------- nothing written in the user's cache


def _tree(d: Path) -> dict[str, int]:
    """Every file under a directory: relative path -> size."""
    return {str(p.relative_to(d)): p.stat().st_size for p in d.rglob("*") if p.is_file()} if d.exists() else {}


def _capture_counting(model: Path, cache_dir: Path, monkeypatch) -> tuple:
    """A tcinspect capture on ``cache_dir`` as the default user (level 0), and torch's counters of the same run."""
    from torch._dynamo.utils import counters
    from torch._inductor import config as inductor_config

    from tcinspect.capturing.engine import capture_file

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache_dir))
    counters.clear()
    with inductor_config.patch({"trace.provenance_tracking_level": 0}):
        rep = capture_file(model, quiet=True)
    return rep, {"fx": dict(counters["inductor"]), "aot": dict(counters["aot_autograd"])}


@pytest.mark.slow
def test_the_users_cache_holds_nothing_tcinspect_wrote(tmp_path, monkeypatch) -> None:
    from tcinspect.capturing import records

    model = Path(__file__).parent.parent / "sample_models" / "gelu_linear.py"
    plain_dir, ours = tmp_path / "plain", tmp_path / "ours"
    # cold: what a plain run writes into a cold cache, against what a tcinspect capture writes into another
    _plain_run(model, plain_dir)
    plain = _tree(plain_dir)
    cold, cold_counters = _capture_counting(model, ours, monkeypatch)
    after_cold = _tree(ours)
    assert set(after_cold) <= set(plain), sorted(set(after_cold) - set(plain))
    assert not [p for p in after_cold if p.startswith(("fxgraph", "aotautograd"))]  # no cache entry
    assert not [p for p in after_cold if "tcinspect" in p]
    fx, aot = _torch_counts(cold_counters)
    assert fx == {"miss": 2} and _counts(cold, "fx_graph") == fx and _counts(cold, "aot_autograd") == aot
    # tcinspect's records are in its own cache directory, keyed by the code
    kept = Path(os.environ["TCINSPECT_CACHE_DIR"]) / records.FOLDER
    assert list((kept / "provenance").glob("*.json")) and list((kept / "memory").glob("*.json"))
    # warm: the user's run fills the cache; a capture then changes nothing in it
    _plain_run(model, ours)
    before = _tree(ours)
    records.forget_in_process()  # as a new process would: the records come from the disk store
    warm, warm_counters = _capture_counting(model, ours, monkeypatch)
    assert _tree(ours) == before
    fx, aot = _torch_counts(warm_counters)
    assert fx == {"hit": 2} and _counts(warm, "fx_graph") == fx and _counts(warm, "aot_autograd") == aot
    # the provenance of the user's own warm entries is found in tcinspect's records, forward and backward
    marks = {(o.part, k.provenance) for o in warm.stages.inductor.outputs for k in o.kernels}
    assert marks == {(o.part, k.provenance) for o in cold.stages.inductor.outputs for k in o.kernels}


def test_records_left_in_the_users_cache_are_read_never_written(tmp_path, monkeypatch) -> None:
    from tcinspect.capturing import records

    monkeypatch.setenv("TCINSPECT_CACHE_DIR", str(tmp_path / "tc"))
    inductor = tmp_path / "inductor"
    legacy = inductor / provenance.STORE_FOLDER
    legacy.mkdir(parents=True)
    code = "def call(args):\n    cpp_fused_0(buf0)\n"
    provenance.remember(legacy, code, {"kernels": {"k": ["add"]}})
    old = _tree(inductor)
    records.forget_in_process()
    store = records.Store("provenance", records.store_dir("provenance"), str(inductor))
    assert store.recall(code) == {"kernels": {"k": ["add"]}}
    assert _tree(inductor) == old  # left as it was
    assert provenance.recall(records.store_dir("provenance"), code) == {"kernels": {"k": ["add"]}}  # migrated
    store.remember(code + "x", {"a": 1})
    assert _tree(inductor) == old and (tmp_path / "tc" / ".gitignore").exists()
    records.forget_in_process()


# ----------------------------------------------------------------------------- a bypass, a changed config


@pytest.mark.slow
def test_a_bypass_shows_torchs_reason(tmp_path, monkeypatch) -> None:
    """torch.cond: Inductor's FX graph cache refuses the graph; the reason is torch's, as torch logs it."""
    import logging

    from torch._dynamo.utils import counters

    from tcinspect.capturing.engine import capture_file

    said: list[str] = []

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger = logging.getLogger("torch._inductor.codecache")
    handler, level = Said(level=logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    try:
        counters.clear()
        rep = capture_file(MODELS / "cache_bypass.py")  # not quiet: torch's own log handlers stay on
        torch_bypasses = counters["inductor"]["fxgraph_cache_bypass"]
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    logged = [m.split("because ", 1)[1].strip("'") for m in said if m.startswith("Bypassing FX Graph Cache")]
    ours = [c for _, c in cachekeys.lookups(rep.compile_time) if c.cache == "fx_graph"]
    assert torch_bypasses >= 1 and [c.state for c in ours] == ["bypass"] * torch_bypasses
    assert [c.reason for c in ours] == logged
    assert "HigherOrderOperator: cond" in logged[0]
    (entry,) = [e for e in caches.document(rep) if e["cache"] == "fx_graph"]
    assert entry["state"] == "bypass" and entry["reason"] == logged[0]
    assert entry["where"].startswith(str(MODELS / "cache_bypass.py") + ":7")  # the line calling torch.cond


@pytest.mark.slow
def test_a_changed_inductor_config_is_named(tmp_path, monkeypatch, capsys) -> None:
    """Two runs on one cache, the second with one Inductor config value changed in the model file: its
    misses name that component, as torch's own key components (compiled_fx_graph_hash) differ."""
    from torch._inductor import codecache
    from torch._inductor import config as inductor_config

    from helpers import cli

    keyed: list[list[str]] = []
    hashed = codecache.compiled_fx_graph_hash

    def recording(*args, **kwargs):
        key, lines = hashed(*args, **kwargs)
        keyed.append(list(lines))
        return key, lines

    monkeypatch.setattr(codecache, "compiled_fx_graph_hash", recording)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    model = tmp_path / "model.py"
    source = (Path(__file__).parent.parent / "sample_models" / "gelu_linear.py").read_text()
    model.write_text(source)
    with inductor_config.patch({"trace.provenance_tracking_level": 0, "size_asserts": inductor_config.size_asserts}):
        code, _, err = cli(capsys, "compile-time", str(model), "--format", "json")
        assert code == 0, err
        first = len(keyed)
        model.write_text(source + "\ntorch._inductor.config.size_asserts = not torch._inductor.config.size_asserts\n")
        code, out, err = cli(capsys, "compile-time", str(model), "--format", "json")
        assert code == 0, err
    assert first == 2 and len(keyed) == 4  # forward and backward, each run

    def names(lines: list[str]) -> dict[str, str]:
        return {c.name: c.hash for c in key_components(lines)}

    torch_changed = [sorted(n for n, h in names(after).items() if names(before).get(n) != h)
                     for before, after in zip(keyed[:2], keyed[2:])]
    assert torch_changed == [["inductor_config[size_asserts]"]] * 2
    fx = [e for e in json.loads(out)["cache_lookups"] if e["cache"] == "fx_graph"]
    assert [e["state"] for e in fx] == ["miss", "miss"]
    assert [sorted(c.split(":", 1)[0] for c in e["changed"]) for e in fx] == torch_changed
    assert all("changed since the last run" in e["why"] for e in fx)


def test_a_miss_whose_kernels_came_from_the_code_cache_says_so() -> None:
    # measured: gelu_linear.py's second capture on one TORCHINDUCTOR_CACHE_DIR, its FX graph look-ups missing
    # (tcinspect saves no entry), took 3.05 s against 15.27 s cold, of which compiling kernels 0.15 s against 9.61 s
    assert "came from Inductor's code cache" in caches.kernel_code_reused(0.15, 3.05)
    assert caches.kernel_code_reused(9.61, 15.27) == "" and caches.kernel_code_reused(0.0, 0.0) == ""
