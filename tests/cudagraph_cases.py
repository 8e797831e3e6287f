"""CUDA graph cases under reduce-overhead, each captured by tcinspect beside torch's own record of the same run.

Used by tests/test_gpu_cudagraphs.py (on a GPU) and tests/data/record_cudagraphs.py, which records their events
for tests/test_cudagraphs.py to parse on any machine. torch's record (the oracle): the skip warnings on its
``cudagraphs`` log (an independent handler), ``counters["inductor"]["cudagraph_skips"]``, and the
"[compile id] Recording function=..." debug line cudagraph_trees logs for each recording, by compile id.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from typing import Any

CASES = ("mutated_input", "cpu_tensor", "dynamic_sizes", "mlp_train_sizes", "gpt2_train", "cpu_island",
         "only_cpu_partition", "dynamic_skip", "train_island", "train_island_unpartitioned")
#: the cases' torch._inductor.config settings (graph_partition is torch's default, True, unless said)
CONFIGS: dict[str, dict[str, Any]] = {
    "cpu_tensor": {"graph_partition": False},  # with partitions (2.11's default) CPU ops are cut out
    "dynamic_skip": {"triton.cudagraph_skip_dynamic_graphs": True},
    "train_island_unpartitioned": {"graph_partition": False},
}
#: the cases compiled with dynamic=True, and those that run no backward
DYNAMIC = ("dynamic_sizes", "dynamic_skip")
NO_BACKWARD = ("cpu_island", "only_cpu_partition")


def _models(name: str) -> tuple[Any, tuple, list[tuple]]:
    import torch

    torch.manual_seed(0)
    dev = "cuda"
    if name == "mutated_input":
        class Counted(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(16, 16)

            def forward(self, x, calls):
                calls.add_(1)  # mutates an input: CUDA graph trees skip this graph
                return self.lin(x).relu()

        calls = torch.zeros(1, device=dev)
        return Counted().to(dev), (torch.randn(8, 16, device=dev), calls), []
    if name == "cpu_tensor":
        class Mixed(torch.nn.Module):
            def forward(self, x):
                return x * 2 + torch.ones(8).sum()  # a CPU op in the graph

        return Mixed(), (torch.randn(8, device=dev),), []
    if name in ("dynamic_sizes", "mlp_train_sizes"):
        mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(dev)
        sets = [(torch.randn(b, 16, device=dev),) for b in (16, 32, 8)]
        return mlp, (torch.randn(8, 16, device=dev),), sets
    if name in ("cpu_island", "train_island", "train_island_unpartitioned"):
        class Island(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.Linear(16, 16)
                self.b = torch.nn.Linear(16, 16)

            def forward(self, x):
                h = self.a(x)
                c = (h.cpu() * 2).cuda()  # a CPU island between two partitions
                return self.b(c)

        return Island().to(dev), (torch.randn(8, 16, device=dev),), []
    if name == "only_cpu_partition":
        class OnlyCpu(torch.nn.Module):
            def forward(self, x):
                return (x.cpu().sin() * 3).cuda()  # nothing left to capture

        return OnlyCpu(), (torch.randn(8, 16, device=dev),), []
    if name == "dynamic_skip":
        mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(dev)
        return mlp, (torch.randn(8, 16, device=dev),), [(torch.randn(b, 16, device=dev),) for b in (16, 32)]
    if name == "gpt2_train":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64)
        model = GPT2LMHeadModel(cfg).to(dev)

        class Loss(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, ids):
                return self.model(ids, labels=ids).loss

        ids = torch.randint(0, 128, (2, 16), device=dev)
        return Loss(), (ids,), [(torch.randint(0, 128, (2, 16), device=dev),)]
    raise KeyError(name)


def run_case(name: str, events_file: str = "") -> tuple[Any, dict[str, Any]]:
    """Capture case ``name`` with tcinspect (mode reduce-overhead, on the GPU); its report and torch's record."""
    import torch
    from torch._dynamo.utils import counters

    import tcinspect
    from tcinspect.report import CompileOptions

    warnings: list[str] = []
    recordings: Counter[str] = Counter()
    recorded_functions: list[str] = []  # "compile id function" per recording, in order
    created: list[str] = []  # the scheduler's "Created N graph partitions: ..." lines, in order
    partition_lines: list[str] = []  # its "Partition i: ..." lines

    class Oracle(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if record.levelno >= logging.WARNING and message.startswith("skipping cudagraph"):
                warnings.append(message)
            m = re.match(r"\[([^\]]*)\] Recording function=([^,\s]+)", message)
            if m:
                recordings[m.group(1)] += 1
                recorded_functions.append(f"{m.group(1)} {m.group(2)}")
            if message.startswith("Created ") and "graph partitions" in message:
                created.append(message)
            elif re.match(r"  Partition \d+: ", message):
                partition_lines.append(message.strip())

    handler = Oracle()
    loggers = [logging.getLogger(n) for n in ("torch._inductor.cudagraph_utils.__cudagraphs",
                                              "torch._inductor.cudagraph_trees.__cudagraphs",
                                              "torch._inductor.scheduler.__cudagraphs")]
    saved = [(lg.level, lg.propagate) for lg in loggers]

    model, inputs, sets = _models(name)
    patch = torch._inductor.config.patch(CONFIGS.get(name, {}))
    patch.__enter__()
    counters.clear()
    for lg in loggers:  # the debug lines reach this handler alone
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    if events_file:
        os.environ["TCINSPECT_EVENTS_FILE"] = events_file
    try:
        rep = tcinspect.capture(model, *inputs, input_sets=sets,
                                compile=CompileOptions(mode="reduce-overhead", device="cuda",
                                                        dynamic="true" if name in DYNAMIC else "",
                                                        backward=name not in NO_BACKWARD),
                                fresh=True)
    finally:
        os.environ.pop("TCINSPECT_EVENTS_FILE", None)
        for lg, (level, propagate) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
        patch.__exit__(None, None, None)
    truth = {"case": name, "torch": torch.__version__, "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]),
             "skip_messages": warnings, "recordings_by_compile_id": dict(recordings),
             "recorded_functions": recorded_functions, "partitions_created": created,
             "partition_lines": partition_lines, "config": CONFIGS.get(name, {}),
             "calls": rep.calls, "mode": "reduce-overhead", "dynamic": rep.options.dynamic}
    return rep, truth
