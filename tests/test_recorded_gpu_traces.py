"""Structured traces recorded on an H200 (torch 2.11, Triton 3.6), parsed on any machine, no torch."""

from __future__ import annotations

import pytest

from helpers import DATA, launched
from tcinspect.parse import assemble, events


def stages_of(name: str):
    evs = events.read_jsonl(DATA / f"gpu-trace-{name}.jsonl.gz")
    return assemble.build(evs)[0], evs


@pytest.mark.parametrize("name", ["torch2.11-h200", "breaks", "triton-op", "transformer-layer"])
def test_every_launched_kernel_is_in_the_catalog(name):
    st, evs = stages_of(name)
    outputs = [e for e in evs if e.name == "inductor_output_code"]
    assert len(st.inductor.outputs) == len(outputs) > 0
    for out in st.inductor.outputs:
        assert [k.name for k in out.kernels] == launched(out.wrapper)
        for k in out.kernels:
            if k.kind != "extern":
                assert k.language == "triton" and "@triton.jit" in k.source


def test_user_triton_kernel_and_inductor_kinds():
    st, _ = stages_of("torch2.11-h200")
    fwd = next(o for o in st.inductor.outputs if o.part == "forward")
    kinds = {k.name: k.kind for k in fwd.kernels}
    assert kinds["relu_kernel_0"] == "user_triton"
    assert kinds["triton_poi_fused_gt_0"] == "triton_pointwise"
    assert kinds["triton_per_fused__softmax_exp_prepare_softmax_online_sub_2"] == "triton_persistent_reduction"
    relu = next(k for k in fwd.kernels if k.name == "relu_kernel_0")
    assert relu.numel == "grid (8, 1, 1)" and relu.user_lines == ("/home/user/gpu_probe.py:13",)
    gelu = next(k for k in fwd.kernels if k.name == "triton_poi_fused_add_gelu_mul_1")
    assert gelu.aten_ops == ("aten.gelu", "aten.mul", "aten.add") and gelu.numel == "8192"
    # recorded without provenance tracking: Inductor stated no mapping, so no line is read from the comments
    assert gelu.provenance == "unknown" and gelu.user_lines == () and gelu.source_nodes == ()


def test_aot_graphs_show_the_user_kernel_and_saved_tensors():
    st, _ = stages_of("torch2.11-h200")
    (aot,) = st.aot_autograd.graphs
    targets = [n.target for n in aot.forward.nodes]
    assert any("triton_kernel_wrapper_functional" in t for t in targets)
    assert aot.forward.saved_for_backward and aot.backward is not None and aot.joint is not None
    outputs = next(n for n in aot.forward.nodes if n.op == "output").args
    assert all(s in outputs for s in aot.forward.saved_for_backward)


def test_breaks_trace_types_ids_and_user_lines():
    st, evs = stages_of("breaks")
    assert len(st.dynamo.graph_breaks) == sum(1 for e in evs if e.name == "dynamo_graph_break_reason")
    first = st.dynamo.graph_breaks[0]
    assert first.break_type == "Failed to trace builtin operator" and first.gb_id == "GB0059"
    assert first.user_frame.line == 41 and first.user_frame.code == 'print("tracing")'
    assert any("reorderable_logging_functions" in h for h in first.hints)
    dd = st.dynamo.graph_breaks[1]
    assert dd.break_type == "Data-dependent branching" and dd.gb_id == "GB0170" and dd.user_frame.line == 42
    assert len(st.dynamo.graphs) == sum(1 for e in evs if e.name == "dynamo_output_graph")


def test_triton_op_inference_graph():
    st, _ = stages_of("triton-op")
    (aot,) = st.aot_autograd.graphs
    assert aot.inference is not None and aot.forward is None
    (out,) = st.inductor.outputs
    assert out.part == "inference"
    dynamo_targets = [n.target for n in st.dynamo.graphs[0].graph.nodes]
    assert any("silu" in t for t in dynamo_targets)
