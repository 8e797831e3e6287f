"""The compile caches: tcinspect reports the user's own cache (its hits and misses, its warm time), writes no
entry the user's run would not, keeps kernel provenance exact, and names why a look-up missed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tcinspect.analysis import caches
from tcinspect.parse import provenance
from tcinspect.parse.compile_time import key_components
from tcinspect.report import CacheKeyComponent, CacheLookup, Graph, Kernel, Node

MODELS = Path(__file__).parent / "models"

# ----------------------------------------------------------------------------- pure


def _lookup(state: str, **hashes: str) -> CacheLookup:
    comps = tuple(CacheKeyComponent(n, h, f"value-{h}") for n, h in hashes.items())
    return CacheLookup("fx_graph", "forward", state, key="k" + "".join(hashes.values()), components=comps)


def test_key_components_read_torch_list() -> None:
    got = key_components(["[abc] gm: GraphModule()\n\ndef forward(self):", "[d1] inductor_config[size_asserts]: True",
                          "no brackets", 3])
    assert [(c.name, c.hash) for c in got] == [("gm", "abc"), ("inductor_config[size_asserts]", "d1")]
    assert got[1].value == "True"


def test_changed_components_name_the_component() -> None:
    before, after = _lookup("hit", gm="a", **{"inductor_config[x]": "b"}), _lookup("miss", gm="a", **{"inductor_config[x]": "c"})
    assert caches.changed_components(before, after) == ("inductor_config[x]: value-b → value-c",)
    added = _lookup("miss", gm="a", **{"inductor_config[x]": "b", "default_dtype": "z"})
    assert caches.changed_components(before, added) == ("default_dtype: (absent) → value-z",)


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
    assert kept.provenance == provenance.INFERRED
    provenance.add_event(st2 := provenance.Statement(), provenance.STACK_TRACES, "")
    assert not st2.malformed  # an untracked entry logs no payload: not a malformed artifact


# ----------------------------------------------------------------------------- the user's cache, for real

PLAIN = """
import json, runpy, sys, time
import torch
from torch._dynamo.utils import counters
ns = runpy.run_path(sys.argv[1])
start = time.perf_counter()
torch.compile(ns["model"])(*ns["example_inputs"]).backward()
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
    for _, c in caches.lookups(rep.compile_time):
        if c.cache == cache:
            out[c.state] = out.get(c.state, 0) + 1
    return out


def _entries(cache_dir: Path) -> set[str]:
    return {str(p.relative_to(cache_dir)) for sub in ("fxgraph", "aotautograd") if (cache_dir / sub).exists()
            for p in (cache_dir / sub).rglob("*") if p.is_file()}


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

    # the forward's kernels, loaded from the entry the user's untracked run saved, keep the provenance
    # tcinspect recorded when it saw them compiled (the backward's do not yet: see docs/compile-time.md)
    assert provenance_of(r["warm"], "forward") == provenance_of(r["cold"], "forward")
    assert provenance_of(r["warm"], "forward")
    assert all(k[1] == provenance.INDUCTOR for k in provenance_of(r["warm"], "forward"))
