"""Kernel provenance equals Inductor's own statement, kernel by kernel, on real architectures.

Ground truth is observed at the source in the same run, independently of tcinspect's recorder:
a spy on ``torch._inductor.debug.set_kernel_post_grad_provenance_tracing`` (the function every
generated and extern kernel goes through when Inductor assigns its post-grad nodes and stack
traces) and a raw handler on the structured trace that keeps Inductor's own
``inductor_provenance_tracking_node_mappings`` artifacts. Forward and backward graphs alike.
"""

from __future__ import annotations

import json
import logging
import re

import pytest

torch = pytest.importorskip("torch")

from tcinspect.recording import engine, provenance  # noqa: E402
from tcinspect.report import Options  # noqa: E402

pytestmark = pytest.mark.slow

_LAST_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


class _Truth(logging.Handler):
    """Inductor's statements per graph, keyed by AOT id: {"name:handle": (nodes, stack traces)}."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.pending: dict[str, tuple[list[str], list[str]]] = {}
        self.graphs: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
        self.artifacts: dict[str, dict] = {}
        self._aot_id = ""

    def spy(self, original):
        import torch._inductor.debug as dbg

        def wrapped(node_schedule, kernel_name, is_extern=False):
            handle = original(node_schedule, kernel_name, is_extern)
            if handle is not None:
                key = f"{kernel_name}:{handle}"
                self.pending[key] = (list(dbg._inductor_triton_kernel_to_post_grad_node_info.get(key, [])),
                                     list(dbg._inductor_kernel_stack_trace.get(key, [])))
            return handle
        return wrapped

    def emit(self, record: logging.LogRecord) -> None:
        md = getattr(record, "metadata", {}) or {}
        name = md.get("artifact", {}).get("name", "") if "artifact" in md else next(iter(md), "")
        payload = getattr(record, "payload", None)
        if name == "inductor_output_code":
            self._aot_id = re.search(r"AOT ID: \['([^']+)'\]", payload).group(1)
        elif name == provenance.NODE_MAPPINGS:
            self.artifacts[self._aot_id] = json.loads(payload)
        elif name == provenance.STACK_TRACES:
            self.graphs[self._aot_id] = self.pending
            self.pending = {}


@pytest.fixture
def observed(monkeypatch):
    """Capture a model with tcinspect (cold compile) while recording Inductor's statements."""
    import torch._inductor.codegen.cpp as cpp_codegen
    import torch._inductor.debug as dbg
    from torch._logging import _internal

    truth = _Truth()
    spy = truth.spy(dbg.set_kernel_post_grad_provenance_tracing)
    monkeypatch.setattr(dbg, "set_kernel_post_grad_provenance_tracing", spy)
    monkeypatch.setattr(cpp_codegen, "set_kernel_post_grad_provenance_tracing", spy)
    try:
        import torch._inductor.codegen.triton as triton_codegen
        monkeypatch.setattr(triton_codegen, "set_kernel_post_grad_provenance_tracing", spy)
    except ImportError:  # no triton on this machine
        pass

    def run(model, *inputs):
        _internal.trace_log.addHandler(truth)
        try:
            rep = engine.capture(model, *inputs, options=Options(), fresh=True, quiet=True)
        finally:
            _internal.trace_log.removeHandler(truth)
        assert rep.ok, rep.error
        return rep, truth
    return run


def _innermost(stacks: list[str]) -> tuple[str, ...]:
    out = []
    for s in stacks:
        frames = _LAST_FRAME.findall(s)
        if frames:
            out.append(frames[-1])
    return tuple(dict.fromkeys(f"{f}:{n}" for f, n in out))


def _agreement(rep, truth) -> tuple[int, list[str]]:
    """(kernels compared, disagreements); asserts every graph torch described was found."""
    compared, bad = 0, []
    parts = set()
    for out in rep.stages.inductor.outputs:
        stated = truth.graphs.get(out.aot_id)
        assert stated is not None, f"no Inductor statement seen for {out.aot_id}"
        parts.add(out.part)
        keys = [k.provenance_key for k in out.kernels if k.provenance_key]
        assert sorted(keys) == sorted(stated), f"{out.aot_id}: launches {keys} vs Inductor {sorted(stated)}"
        artifact = truth.artifacts.get(out.aot_id, {}).get("cppCodeToPost", {})
        for k in out.kernels:
            if not k.provenance_key:
                continue
            compared += 1
            nodes, stacks = stated[k.provenance_key]
            if k.provenance != provenance.INDUCTOR:
                bad.append(f"{out.aot_id} {k.provenance_key}: marked {k.provenance!r}")
            if set(k.source_nodes) != set(nodes):
                bad.append(f"{out.aot_id} {k.provenance_key}: nodes {sorted(k.source_nodes)} vs {sorted(nodes)}")
            if k.provenance_key in artifact and set(artifact[k.provenance_key]) != set(k.source_nodes):
                bad.append(f"{out.aot_id} {k.provenance_key}: differs from Inductor's node-mapping artifact")
            # Inductor's stack traces name absolute paths; the report's frames keep the same files
            want = tuple(x.rsplit("/", 1)[-1] for x in _innermost(stacks))
            got = tuple(x.rsplit("/", 1)[-1] for x in k.user_lines)
            if got != want:
                bad.append(f"{out.aot_id} {k.provenance_key}: lines {got} vs {want}")
    assert {"forward", "backward"} <= parts, parts
    return compared, bad


def _check_extern_exact(rep) -> None:
    """An extern kernel lists the node it computes and no node another kernel of its graph computes."""
    for out in rep.stages.inductor.outputs:
        claimed: dict[str, str] = {}
        for k in out.kernels:
            if k.kind != "extern":
                for n in k.source_nodes:
                    claimed[n] = k.name
        for k in out.kernels:
            if k.kind == "extern" and k.provenance == provenance.INDUCTOR:
                assert k.source_nodes, k.name
                stolen = [n for n in k.source_nodes if n in claimed]
                assert not stolen, f"{out.aot_id} {k.name} lists {stolen}, computed by {[claimed[n] for n in stolen]}"


def test_sequential_mlp_training(observed):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    rep, truth = observed(model, torch.randn(4, 16))
    compared, bad = _agreement(rep, truth)
    assert compared >= 8 and not bad, bad
    _check_extern_exact(rep)
    # no user line exists (the code is torch's own), but the module path says which layer
    by_part = {o.part: o for o in rep.stages.inductor.outputs}
    fwd = {k.provenance_key.split(":")[0]: k for k in by_part["forward"].kernels}
    assert fwd["cpp_fused_gelu_0"].modules == ("1",)
    assert [k.modules for k in by_part["forward"].kernels if k.kind == "extern"] == [("0",), ("2",)]
    assert all(k.dynamo_nodes for k in by_part["forward"].kernels)


class _LossOf(torch.nn.Module):
    """A Hugging Face model with labels, returning its loss (what a training step backpropagates)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels):
        return self.m(input_ids=ids, labels=labels).loss


def test_gpt2_training(observed):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)
    model = _LossOf(transformers.GPT2LMHeadModel(cfg))
    ids = torch.randint(0, 64, (2, 8))
    rep, truth = observed(model, ids, ids)
    compared, bad = _agreement(rep, truth)
    assert compared >= 15 and not bad, bad
    _check_extern_exact(rep)
    fwd_modules = {m for o in rep.stages.inductor.outputs if o.part == "forward" for k in o.kernels for m in k.modules}
    assert "m.transformer.h.0.attn" in fwd_modules or "m.transformer.h.0.attn.c_attn" in fwd_modules, fwd_modules
    bwd_modules = {m for o in rep.stages.inductor.outputs if o.part == "backward" for k in o.kernels for m in k.modules}
    assert any(m.startswith("m.transformer.h.0") for m in bwd_modules), bwd_modules
    # the library frame is kept beside the innermost line: modeling_gpt2.py appears in the frames
    assert any(f.file.endswith("modeling_gpt2.py") for o in rep.stages.inductor.outputs for k in o.kernels for f in k.frames)


def test_bert_training(observed):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                                  vocab_size=64, max_position_embeddings=16, num_labels=2)
    model = _LossOf(transformers.BertForSequenceClassification(cfg))
    ids = torch.randint(0, 64, (2, 8))
    rep, truth = observed(model, ids, torch.tensor([0, 1]))
    compared, bad = _agreement(rep, truth)
    assert compared >= 15 and not bad, bad
    _check_extern_exact(rep)


def test_warm_fx_cache_hit_gives_the_same_provenance(tmp_path, monkeypatch):
    """A second run served from the FX graph cache reports what the cold compile stated."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    cold = engine.capture(model, x, quiet=True)
    warm = engine.capture(model, x, quiet=True)
    assert [o.cache for o in cold.stages.inductor.outputs] == ["miss", "miss"]
    assert [o.cache for o in warm.stages.inductor.outputs] == ["hit", "hit"]

    def prov(rep):
        return [(o.aot_id.split("_", 1)[1], k.provenance_key, k.provenance, k.source_nodes, k.user_lines, k.modules)
                for o in rep.stages.inductor.outputs for k in o.kernels]
    assert prov(warm) == prov(cold)
    assert all(p[2] == provenance.INDUCTOR for p in prov(cold))
    # without tcinspect's record of the cold compile, a warm backward is marked inferred, never guessed
    for f in (tmp_path / "inductor" / provenance.STORE_FOLDER).iterdir():
        f.unlink()
    warm2 = engine.capture(model, x, quiet=True)
    marks = {(o.part, k.provenance) for o in warm2.stages.inductor.outputs for k in o.kernels}
    assert ("forward", provenance.INDUCTOR) in marks and ("backward", provenance.INFERRED) in marks
    assert ("backward", provenance.INDUCTOR) not in marks
