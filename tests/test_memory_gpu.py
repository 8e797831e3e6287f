"""On a CUDA GPU: tcinspect's measured step peaks against the test's own, on a tiny Llama training step.

Both sides measure the same thing: one forward + backward of the same function, just after a warm-up step of
that function (so what a first call allocates once and keeps, such as a cuBLAS workspace, is in the step's
start on both sides), with gradients dropped, Python's garbage collected and then paused for the step (so a
reference cycle from an earlier step or from the compile is freed before the start, not inside the step in
some runs only), and the peak statistics reset. ``python -m pytest -q -s -m gpu tests/test_memory_gpu.py``
prints both sides' numbers.
"""

from __future__ import annotations

import gc

import pytest
import torch

from tcinspect.capturing.engine import capture
from tcinspect.capturing.outputs import scalar_loss
from tcinspect.report import CompileOptions

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=1024, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).cuda()
    ids = torch.randint(0, 1024, (4, 128), device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    return model, (ids,)


def _own_step(fn, model, inputs, new_step: bool = False):
    """The test's own measurement: (start, peak, alive after forward) of one forward + backward."""
    if new_step:  # a training loop under CUDA graphs starts each step
        torch.compiler.cudagraph_mark_step_begin()
    model.zero_grad(set_to_none=True)
    gc.collect()
    gc.disable()
    try:
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
    finally:
        gc.enable()


def _close(a: int, b: int, pct: float) -> bool:
    return abs(a - b) <= pct / 100.0 * max(a, b)


#: Above the step's start both sides run the same model, inputs and compiled code (the test's compile is served
#: by the FX graph cache the capture filled, so the kernels and their buffer reuse are the same) under the same
#: protocol, so the rise of the peak and what the forward leaves alive are expected equal to the byte. The 1%
#: allowed (about 1 MB on this model) only absorbs an allocation the graph does not fix, should one appear.
RISE_PCT = 1.0
#: The absolute peaks also hold what is alive at the step's start, which differs between the two: tcinspect's
#: capture keeps its own objects (the first call's outputs, its recorder) while the test's compile keeps others;
#: the issue's 5% bounds that difference.
ABSOLUTE_PCT = 5.0


@pytest.mark.parametrize("mode", ["", "reduce-overhead"])
def test_llama_step_peaks_match_the_tests_own_measurement(mode):
    model, inputs = _llama()
    rep = capture(model, *inputs, compile=CompileOptions(device="cuda", mode=mode), measure_memory=True)
    assert rep.ok, rep.error
    m = rep.memory.measured
    assert m is not None, rep.memory.not_measured
    graphs = mode == "reduce-overhead"
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, mode=mode or None)
        for _ in range(3):  # compile, then (reduce-overhead) record the CUDA graphs, then replay: warm
            _own_step(compiled, model, inputs, graphs)
        c_start, c_peak, c_fwd = _own_step(compiled, model, inputs, graphs)
        _own_step(model, model, inputs)  # eager's warm-up step, as tcinspect's
        e_start, e_peak, e_fwd = _own_step(model, model, inputs)
    finally:
        torch._dynamo.reset()
    print(f"mode={mode or 'default'} tcinspect: compiled peak {m.compiled_peak} start {m.compiled_start} "
          f"rise {m.compiled_peak - m.compiled_start} fwd {m.compiled_forward_end}; eager peak {m.eager_peak} "
          f"start {m.eager_start} rise {m.eager_peak - m.eager_start} fwd {m.eager_forward_end}; "
          f"pool {m.cudagraph_pool} ratio {m.peak_ratio}")
    print(f"mode={mode or 'default'} test:      compiled peak {c_peak} start {c_start} rise {c_peak - c_start} "
          f"fwd {c_fwd}; eager peak {e_peak} start {e_start} rise {e_peak - e_start} fwd {e_fwd}")
    assert _close(m.compiled_peak, c_peak, ABSOLUTE_PCT) and _close(m.eager_peak, e_peak, ABSOLUTE_PCT)
    assert _close(m.compiled_peak - m.compiled_start, c_peak - c_start, RISE_PCT)
    assert _close(m.eager_peak - m.eager_start, e_peak - e_start, RISE_PCT)
    assert _close(m.eager_forward_end, e_fwd, RISE_PCT)
    if graphs:
        assert m.cudagraph_pool > 0
    else:
        assert _close(m.compiled_forward_end, c_fwd, RISE_PCT)
        # what the forward left alive holds at least the activations the graph saved for backward
        assert m.compiled_forward_end >= rep.memory.graphs[0].bytes_of("activation")


def test_a_capture_not_asked_to_measure_runs_no_extra_step_on_the_gpu():
    """Inspecting does not change what runs: without measure_memory a CUDA capture makes one training step per
    input set, as a plain run does, and says why nothing was measured; asked, it adds its warm-up and measured
    steps (compiled and eager). Every capture makes one more call after its record, runtime coverage's
    (docs/coverage.md): counted apart, by the report saying it measured one."""
    from tcinspect.capturing import memory

    model, inputs = _llama()
    steps: list[int] = []
    model.model.embed_tokens.weight.register_hook(lambda g: steps.append(1))  # once per backward
    rep = capture(model, *inputs, compile=CompileOptions(device="cuda"))
    assert rep.ok and rep.memory.measured is None and rep.memory.not_measured == memory.NOT_ASKED
    coverage_call = 1 if rep.coverage.runtime.not_measured == "" else 0
    assert len(steps) == 1 + coverage_call
    steps.clear()
    rep = capture(model, *inputs, compile=CompileOptions(device="cuda"), measure_memory=True)
    assert rep.memory.measured is not None
    coverage_call = 1 if rep.coverage.runtime.not_measured == "" else 0
    assert len(steps) == 1 + 2 * (memory.WARMUP_STEPS + 1) + coverage_call
