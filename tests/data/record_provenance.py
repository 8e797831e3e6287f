"""Record provenance traces: tcinspect's event stream of a compile plus Inductor's own statements.

    python tests/data/record_provenance.py [--device cpu|cuda] [--out DIR] [NAME ...]

For each model it writes ``provenance-NAME-torchVER-DEVICE.jsonl.gz`` (every event tcinspect recorded,
as ``read_jsonl`` reads it) and ``...truth.json.gz``: what Inductor stated for each graph, observed at the
source in the same run (a spy on ``set_kernel_post_grad_provenance_tracing``: kernel "name:handle" ->
post-grad nodes and stack traces), so tests parse the trace on any machine and compare with torch's
own answer. It also prints, per model, how many kernels tcinspect's live report agrees on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


class Spy(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.pending: dict = {}
        self.graphs: dict = {}
        self.aot_id = ""

    def wrap(self, original):
        import torch._inductor.debug as dbg

        def wrapped(node_schedule, kernel_name, is_extern=False):
            handle = original(node_schedule, kernel_name, is_extern)
            if handle is not None:
                key = f"{kernel_name}:{handle}"
                self.pending[key] = [list(dbg._inductor_triton_kernel_to_post_grad_node_info.get(key, [])),
                                     list(dbg._inductor_kernel_stack_trace.get(key, []))]
            return handle
        return wrapped

    def emit(self, record):
        md = getattr(record, "metadata", {}) or {}
        name = md.get("artifact", {}).get("name", "") if "artifact" in md else next(iter(md), "")
        if name == "inductor_output_code":
            self.aot_id = re.search(r"AOT ID: \['([^']+)'\]", record.payload).group(1)
        elif name == "inductor_provenance_tracking_kernel_stack_traces":
            self.graphs[self.aot_id] = self.pending
            self.pending = {}


def _loss_of(m):
    class LossOf(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids, labels):
            return self.m(input_ids=ids, labels=labels).loss
    return LossOf()


def build(name: str, device: str):
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
        return model.to(device), (torch.randn(4, 16, device=device),), {}
    if name == "gpt2":
        import transformers
        cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                                      bos_token_id=0, eos_token_id=0)
        ids = torch.randint(0, 64, (2, 8), device=device)
        return _loss_of(transformers.GPT2LMHeadModel(cfg)).to(device), (ids, ids), {}
    if name == "llama":
        import transformers
        cfg = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                       intermediate_size=128, vocab_size=128, max_position_embeddings=64,
                                       bos_token_id=0, eos_token_id=0, pad_token_id=0)
        ids = torch.randint(0, 128, (2, 32), device=device)
        return _loss_of(transformers.LlamaForCausalLM(cfg)).to(device), (ids, ids), {}
    if name == "block":
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
        return layer.to(device), (torch.randn(2, 16, 64, device=device),), {}
    if name == "mm_template":  # max-autotune: Triton matmul templates (GPU)
        model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU())
        return model.to(device), (torch.randn(128, 256, device=device),), {"mode": "max-autotune-no-cudagraphs"}
    if name == "user_triton":
        sys.path.insert(0, str(HERE.parent.parent / "sample_models"))
        import runpy
        ns = runpy.run_path(str(HERE.parent.parent / "sample_models" / "lenet_triton_relu.py"))
        return ns["model"].to(device), tuple(x.to(device) for x in ns["example_inputs"]), {}
    raise SystemExit(f"unknown model {name}")


def record(name: str, device: str, out: Path) -> None:
    import torch._inductor.codegen.cpp as cpp_codegen
    import torch._inductor.debug as dbg
    from torch._logging import _internal

    from tcinspect.capturing import engine, recorder
    from tcinspect.parse import provenance
    from tcinspect.report import CompileOptions

    model, inputs, extra = build(name, device)
    spy = Spy()
    wrapped = spy.wrap(dbg.set_kernel_post_grad_provenance_tracing)
    originals = [(dbg, dbg.set_kernel_post_grad_provenance_tracing),
                 (cpp_codegen, cpp_codegen.set_kernel_post_grad_provenance_tracing)]
    try:
        import torch._inductor.codegen.triton as triton_codegen
        originals.append((triton_codegen, triton_codegen.set_kernel_post_grad_provenance_tracing))
    except ImportError:
        pass
    for mod, _ in originals:
        mod.set_kernel_post_grad_provenance_tracing = wrapped
    ver = torch.__version__.split("+")[0]
    stem = f"provenance-{name}-torch{ver}-{device}"
    with tempfile.TemporaryDirectory() as tmp:
        events_file = os.path.join(tmp, "events.jsonl")
        os.environ[recorder.EVENTS_FILE_ENV] = events_file
        _internal.trace_log.addHandler(spy)
        try:
            rep = engine.capture(model, *inputs, compile=CompileOptions(mode=extra.get("mode", "")), fresh=True,
                                 quiet=True)
        finally:
            _internal.trace_log.removeHandler(spy)
            os.environ.pop(recorder.EVENTS_FILE_ENV, None)
            for mod, fn in originals:
                mod.set_kernel_post_grad_provenance_tracing = fn
        cwd = os.getcwd() + os.sep
        with open(events_file, encoding="utf-8") as fh, gzip.open(out / f"{stem}.jsonl.gz", "wt", encoding="utf-8") as gz:
            for line in fh:
                gz.write(line.replace(cwd, ""))
    with gzip.open(out / f"{stem}.truth.json.gz", "wt", encoding="utf-8") as gz:
        gz.write(json.dumps({"torch": torch.__version__, "device": device, "graphs": spy.graphs}, indent=1, sort_keys=True))
    # agreement of the live report, printed for the record
    compared = agree = 0
    for o in rep.stages.inductor.outputs:
        stated = spy.graphs.get(o.aot_id, {})
        for k in o.kernels:
            if k.provenance_key in stated:
                compared += 1
                agree += (k.provenance == provenance.INDUCTOR and set(k.source_nodes) == set(stated[k.provenance_key][0]))
    kinds = sorted({k.kind for o in rep.stages.inductor.outputs for k in o.kernels})
    print(f"{stem}: ok={rep.ok} outputs={[o.aot_id for o in rep.stages.inductor.outputs]} kernels={rep.summary.kernels} "
          f"compared={compared} agree={agree} kinds={kinds}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("names", nargs="*", default=["mlp", "gpt2"])
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        record(name, args.device, out)


if __name__ == "__main__":
    main()
