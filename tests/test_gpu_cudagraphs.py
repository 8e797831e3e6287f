"""CUDA graphs under reduce-overhead on a real GPU: tcinspect's section equals torch's own record of the run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _case(name):
    from cudagraph_cases import run_case

    return run_case(name)


def _check_against_torch(rep, truth):
    cg = rep.cudagraphs
    assert cg is not None
    assert cg.skips == truth["cudagraph_skips"] == len(truth["skip_messages"])
    by_compile: dict[str, int] = {}
    for g in cg.graphs:
        by_compile[g.compile_id] = by_compile.get(g.compile_id, 0) + len(g.recordings)
    assert {k: v for k, v in by_compile.items() if v} == truth["recordings_by_compile_id"]
    reasons = " ".join(g.reason for g in cg.graphs)
    for message in truth["skip_messages"]:
        assert message.split(". Found from")[0].replace("skipping cudagraphs due to ", "") in reasons


def test_mutated_input_is_a_skip_with_torchs_reason():
    rep, truth = _case("mutated_input")
    _check_against_torch(rep, truth)
    forward = [g for g in rep.cudagraphs.graphs if g.part == "forward"]
    assert forward and forward[0].status == "skipped" and "mutated inputs" in forward[0].reason


def test_cpu_tensor_is_a_skip():
    rep, truth = _case("cpu_tensor")
    _check_against_torch(rep, truth)
    assert any(g.status == "skipped" and "cpu device" in g.reason for g in rep.cudagraphs.graphs)


def test_dynamic_sizes_re_record():
    rep, truth = _case("dynamic_sizes")
    _check_against_torch(rep, truth)
    assert rep.cudagraphs.rerecordings >= 1


def test_training_over_sizes_forward_and_backward():
    rep, truth = _case("mlp_train_sizes")
    _check_against_torch(rep, truth)
    assert {g.part for g in rep.cudagraphs.graphs if g.status == "recorded"} == {"forward", "backward"}


def test_gpt2_training_step():
    rep, truth = _case("gpt2_train")
    _check_against_torch(rep, truth)
    assert rep.cudagraphs.recordings >= 2
