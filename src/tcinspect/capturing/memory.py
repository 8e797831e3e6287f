"""Peak memory of one training step, compiled and eager, on a CUDA GPU (``tcinspect memory``).

Measured only when asked for (``Options.measure_memory``: the ``memory`` command, ``check``'s peak budgets),
since it runs the model more times than the capture does: inspecting must not change what a plain capture runs.

Each step (forward, then backward on the output's scalar loss) starts with every gradient dropped, Python's
garbage collected and then paused, and the allocator's peak statistics reset
(``torch.cuda.reset_peak_memory_stats``), and reads ``torch.cuda.max_memory_allocated`` at its end: the peak
of the CUDA caching allocator over the step, parameters and inputs included. ``memory_allocated`` after the
forward, less at its start, is what the forward left alive for the backward (saved tensors and outputs). The
step measured is never a function's first: a warm-up step of the same function runs just before it, so what a
first call allocates once and keeps (a cuBLAS workspace per handle and stream, lazily built state) is in the
start of the step measured, not in its rise. On a CPU nothing is measured: PyTorch keeps no allocator peak
there, and process-wide RSS is not the tensors' memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional

from tcinspect import collector
from tcinspect.capturing import modelfile, outputs
from tcinspect.report import MemoryMeasurement, Options, Report

METHOD = ("torch.cuda.max_memory_allocated over one step (forward + backward), after a warm-up step of the same "
          "function; peak stats reset, gradients dropped and garbage collected before it, no collection during it; "
          "memory_allocated after the forward less at its start")
#: steps of the same function run just before the one measured (CUDA graph trees: warm up, then record)
WARMUP_STEPS = 1
CUDAGRAPH_WARMUP_STEPS = 2
#: why a CUDA capture has no measurement when nothing asked for one
NOT_ASKED = ("not measured: this capture was not asked to (peaks are measured by `tcinspect memory` and by `check` "
             "with a peak budget, which run warm-up and measured training steps on the GPU after compiling)")


def _drop_grads(model: Any, inputs: Any) -> None:
    import torch

    if isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
    for value in modelfile.as_call(inputs).values():
        if isinstance(value, torch.Tensor) and value.requires_grad:
            value.grad = None


def step_peak(fn: Callable[..., Any], model: Any, inputs: Any, new_step: bool = False) -> tuple[int, int, int]:
    """(memory at the start, peak over the step, memory left alive by the forward) of one training step;
    ``new_step``: under CUDA graphs, mark it as a new step first, as the capture's own calls are."""
    import gc

    import torch

    if new_step:
        from tcinspect.capturing import _compat

        _compat.cudagraphs.cudagraph_step_begin()
    _drop_grads(model, inputs)
    # CUDA tensors an earlier step or the compile left in reference cycles are freed now, not by a collection
    # that happens to run inside the step (it would lower the step's rise by their bytes in some runs only)
    gc.collect()
    with collector.paused():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        out = modelfile.as_call(inputs)(fn)
        torch.cuda.synchronize()
        forward_end = torch.cuda.memory_allocated() - start
        loss = outputs.scalar_loss(out)
        if loss is not None:
            loss.backward()
        del out, loss
        torch.cuda.synchronize()
        return start, torch.cuda.max_memory_allocated(), forward_end


def cudagraph_pool_bytes() -> int:
    """Bytes reserved in private memory pools (CUDA graphs' pools under mode reduce-overhead): the segments
    of ``torch.cuda.memory_snapshot()`` whose pool id is not the default (0, 0)."""
    import torch

    total = 0
    for seg in torch.cuda.memory_snapshot():
        pool = seg.get("segment_pool_id")
        if pool is not None and tuple(pool) != (0, 0):
            total += int(seg.get("total_size", 0))
    return total


def measure(model: Any, compiled: Callable[..., Any], inputs: Any, run: Any,
            device: str) -> Optional[MemoryMeasurement]:
    """One compiled and one eager training step on a CUDA device, each after its warm-up steps; None unless
    asked for (``Options.measure_memory``), elsewhere than on a CUDA device, or without a backward."""
    if not run.options.measure_memory or not device.startswith("cuda") or not run.options.backward:
        return None
    import torch

    run.recorder.call = -1
    graphs = run.options.mode in ("reduce-overhead", "max-autotune")
    # CUDA graph trees warm up on one call and record on the next: the step measured is a replay
    for _ in range(CUDAGRAPH_WARMUP_STEPS if graphs else WARMUP_STEPS):
        step_peak(compiled, model, inputs, run.cudagraph_steps)
    c_start, c_peak, c_fwd = step_peak(compiled, model, inputs, run.cudagraph_steps)
    pool = cudagraph_pool_bytes()
    for _ in range(WARMUP_STEPS):
        step_peak(model, model, inputs)
    e_start, e_peak, e_fwd = step_peak(model, model, inputs)
    notes = []
    if graphs:
        notes.append("CUDA graphs: the compiled step measured is a replay (two steps before it warmed up and "
                     "recorded the graphs); their pool is reserved memory, shown apart")
    return MemoryMeasurement(
        device_name=torch.cuda.get_device_name(), method=METHOD, compiled_peak=c_peak, eager_peak=e_peak,
        compiled_start=c_start, eager_start=e_start, compiled_forward_end=c_fwd, eager_forward_end=e_fwd,
        cudagraph_pool=pool, notes=tuple(notes))


def attach(rep: Report, measured: Optional[MemoryMeasurement], device: str, options: Options) -> Report:
    """The report with the measurement, or with why nothing was measured; no memory section stays none."""
    if rep.memory is None:
        return rep
    if measured is not None:
        return rep.replace(memory=replace(rep.memory, measured=measured))
    if not device.startswith("cuda"):
        why = (f"not measured: this run was on {device or 'cpu'}; peaks are measured on a CUDA device only "
               "(torch.cuda.max_memory_allocated), since PyTorch keeps no allocator peak on a CPU")
    elif not options.backward:
        why = "not measured: --no-backward ran no training step"
    elif not options.measure_memory:
        why = NOT_ASKED
    else:
        why = "not measured: the run failed"
    return rep.replace(memory=replace(rep.memory, not_measured=why))
