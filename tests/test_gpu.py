"""On a CUDA GPU: Triton kernels, user Triton kernels and the Triton samples (skipped without one)."""

from __future__ import annotations

import runpy

import pytest
import torch

from conftest import SAMPLES, launched
from tcinspect.recording.engine import capture_file
from tcinspect.report import OK, Options

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]




@pytest.mark.parametrize("sample", ["lenet_triton_relu.py", "silu_triton_op.py", "transformer_block.py", "tiny.py"])
def test_gpu_kernels_equal_run_and_get_code(sample):
    from torch._inductor.utils import run_and_get_code

    rep = capture_file(SAMPLES / sample, options=Options(device="cuda"))
    assert rep.ok and rep.stages.inductor.status == OK and rep.device == "cuda"
    torch._dynamo.reset()
    ns = runpy.run_path(str(SAMPLES / sample))
    model = ns["model"].to("cuda") if hasattr(ns["model"], "to") else ns["model"]
    inputs = tuple(x.to("cuda") if isinstance(x, torch.Tensor) else x for x in ns["example_inputs"])
    compiled = torch.compile(model)

    def step():
        out = compiled(*inputs)
        if out.requires_grad:
            out.float().sum().backward()
        return out

    _, codes = run_and_get_code(step)
    torch._dynamo.reset()
    oracle = sorted(n for code in codes for n in launched(code))
    ours = sorted(k.name for o in rep.stages.inductor.outputs for k in o.kernels)
    assert ours == oracle and ours
    kinds = {k.kind for o in rep.stages.inductor.outputs for k in o.kernels}
    assert kinds & {"triton_pointwise", "triton_reduction", "triton_persistent_reduction", "user_triton"}


def test_lenet_user_triton_kernel_through_every_stage():
    rep = capture_file(SAMPLES / "lenet_triton_relu.py")
    (aot,) = rep.stages.aot_autograd.graphs
    assert any("triton_kernel_wrapper_functional" in n.target for n in aot.forward.nodes)
    users = [k for o in rep.stages.inductor.outputs for k in o.kernels if k.kind == "user_triton"]
    assert users and all(k.name.startswith("relu_kernel") and "@triton.jit" in k.source for k in users)
    assert all(k.numel.startswith("grid (") for k in users)


def test_silu_triton_op_is_transparent():
    rep = capture_file(SAMPLES / "silu_triton_op.py", options=Options(fullgraph=True))
    assert rep.ok and rep.summary.graphs == 1 and rep.summary.graph_breaks == 0
    (aot,) = rep.stages.aot_autograd.graphs
    assert aot.inference is not None
    kernels = [k for o in rep.stages.inductor.outputs for k in o.kernels]
    assert any(k.kind == "user_triton" and "triton_silu_kernel" in k.source for k in kernels)
