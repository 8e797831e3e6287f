"""On a CUDA GPU: tcinspect's measured step peaks against the test's own, on a tiny Llama training step."""

from __future__ import annotations

import pytest
import torch

from tcinspect.capturing.engine import capture
from tcinspect.capturing.outputs import scalar_loss
from tcinspect.report import Options

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=1024, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).cuda()
    ids = torch.randint(0, 1024, (4, 128), device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    return model, (ids,)


def _own_step(fn, model, inputs):
    """The test's own measurement: (start, peak, alive after forward) of one forward + backward."""
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    out = fn(*inputs)
    torch.cuda.synchronize()
    forward_end = torch.cuda.memory_allocated() - start
    scalar_loss(out).backward()  # the loss tcinspect's step runs backward on
    del out
    torch.cuda.synchronize()
    return start, torch.cuda.max_memory_allocated(), forward_end


def _close(a: int, b: int, pct: float = 5.0) -> bool:
    return abs(a - b) <= pct / 100.0 * max(a, b)


@pytest.mark.parametrize("mode", ["", "reduce-overhead"])
def test_llama_step_peaks_match_the_tests_own_measurement(mode):
    model, inputs = _llama()
    rep = capture(model, *inputs, options=Options(device="cuda", mode=mode))
    assert rep.ok, rep.error
    m = rep.memory.measured
    assert m is not None, rep.memory.not_measured
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, mode=mode or None)
        for _ in range(3):  # compile, then (reduce-overhead) record the CUDA graphs, then replay
            _own_step(compiled, model, inputs)
        c_start, c_peak, c_fwd = _own_step(compiled, model, inputs)
        e_start, e_peak, e_fwd = _own_step(model, model, inputs)
    finally:
        torch._dynamo.reset()
    print(f"mode={mode or 'default'} tcinspect compiled {m.compiled_peak} eager {m.eager_peak} "
          f"fwd {m.compiled_forward_end}/{m.eager_forward_end} pool {m.cudagraph_pool} ratio {m.peak_ratio}; "
          f"test compiled {c_peak} eager {e_peak} fwd {c_fwd}/{e_fwd}")
    assert _close(m.compiled_peak, c_peak) and _close(m.eager_peak, e_peak)
    assert _close(m.compiled_peak - m.compiled_start, c_peak - c_start)
    assert _close(m.eager_peak - m.eager_start, e_peak - e_start)
    assert _close(m.eager_forward_end, e_fwd)
    if mode == "reduce-overhead":
        assert m.cudagraph_pool > 0
    else:
        assert _close(m.compiled_forward_end, c_fwd)
        # what the forward left alive holds at least the activations the graph saved for backward
        assert m.compiled_forward_end >= rep.memory.graphs[0].bytes_of("activation")
