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


def _check_partitions(rep, truth):
    """tcinspect's partitions and their recordings equal torch's own cudagraphs debug log of the same run."""
    from collections import Counter

    graphs = [g for g in rep.cudagraphs.graphs if g.partitions]
    created = Counter(f"Created {len(g.partitions)} graph partitions: {sum(p.cudagraphable for p in g.partitions)} "
                      f"cudagraphable, {sum(not p.cudagraphable for p in g.partitions)} non-cudagraphable"
                      for g in graphs)
    assert created == Counter(truth["partitions_created"])
    recorded = Counter(f"{g.compile_id} {p.function}" for g in graphs for p in g.partitions for _ in p.recordings)
    assert recorded == Counter(truth["recorded_functions"])


def test_cpu_island_three_partitions_two_captured():
    rep, truth = _case("cpu_island")
    _check_against_torch(rep, truth)
    _check_partitions(rep, truth)
    (g,) = rep.cudagraphs.graphs
    assert [p.cudagraphable for p in g.partitions] == [True, False, True] and g.rerecordings == 0
    assert "cpu ops" in g.partitions[1].reasons and g.kernels_in_cudagraphs < g.kernels


def test_only_cpu_partition_is_a_skip_torch_never_logged():
    rep, truth = _case("only_cpu_partition")
    _check_against_torch(rep, truth)
    _check_partitions(rep, truth)
    (g,) = rep.cudagraphs.graphs
    assert truth["cudagraph_skips"] == 0 and g.status == "skipped" and "no cudagraphable partition" in g.reason
    assert rep.cudagraphs.unlogged_skips == 1


def test_dynamic_skip_and_training_partitions_on_and_off():
    for name in ("dynamic_skip", "train_island", "train_island_unpartitioned"):
        rep, truth = _case(name)
        _check_against_torch(rep, truth)
        _check_partitions(rep, truth)
    assert all(g.status == "skipped" for g in _case("dynamic_skip")[0].cudagraphs.graphs)
