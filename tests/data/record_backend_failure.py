"""Record a run in which Inductor fails on some graphs and Dynamo runs those frames eagerly, with torch's counts.

    python tests/data/record_backend_failure.py

Hugging Face Longformer (2 layers, hidden 32, random weights, 32 tokens with one global-attention token)
through Inductor, forward and backward, cold. Inductor's AOTAutograd tracing raises
``DataDependentOutputException`` on the global-attention graphs; Dynamo logs each failure as "WON'T
CONVERT" and runs the frame eagerly. Writes backend-failure-longformer-torch<version>-cpu.jsonl.gz (every
structured-trace record, as tests/data/record_traces.py writes them) and .truth.json beside it: what a
counting backend around Inductor saw (each graph it was handed, its call_* node count, and the exception
when Inductor raised), ``counters["stats"]["unique_graphs"]`` and ``counters["graph_break"]``.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from record_traces import DROPPED, Records, _portable  # noqa: E402


def model_and_inputs():
    import torch
    from transformers import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    cfg = LongformerConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                           vocab_size=128, attention_window=[4, 4], max_position_embeddings=80, pad_token_id=1)
    ids = torch.randint(0, 128, (2, 32), generator=torch.Generator().manual_seed(0))
    global_attention = torch.zeros_like(ids)
    global_attention[:, 0] = 1
    return LongformerModel(cfg).eval(), (ids, None, global_attention)


def main() -> None:
    cache_dir = tempfile.mkdtemp(prefix="tcinspect-record-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    import torch
    from torch._dynamo.utils import counters
    from torch._guards import CompileContext

    model, inputs = model_and_inputs()
    inner = torch._dynamo.lookup_backend("inductor")
    handed: list[dict] = []

    def counting(gm, example_inputs):
        seen = {"compile_id": str(CompileContext.current_compile_id()),
                "ops": sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")),
                "error": ""}
        handed.append(seen)
        try:
            return inner(gm, example_inputs)
        except Exception as exc:
            seen["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise

    records = Records()
    trace = logging.getLogger("torch.__trace")
    old_level = trace.level
    trace.addHandler(records)
    trace.setLevel(logging.DEBUG)
    torch._dynamo.reset()
    counters.clear()
    try:
        out = torch.compile(model, backend=counting)(*inputs)
        out.last_hidden_state.sum().backward()
    finally:
        trace.removeHandler(records)
        trace.setLevel(old_level)
    assert not DROPPED & {k for r in records.lines for k in r["meta"]}
    version = torch.__version__.split("+")[0]
    name = HERE / f"backend-failure-longformer-torch{version}-cpu"
    with gzip.GzipFile(f"{name}.jsonl.gz", "wb", mtime=0) as fh:
        fh.write("".join(_portable(json.dumps(r, default=str), cache_dir) + "\n" for r in records.lines).encode())
    truth = {"torch": torch.__version__, "handed": handed,
             "unique_graphs": int(counters["stats"]["unique_graphs"]),
             "graph_break_counter": dict(counters["graph_break"])}
    Path(f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(len(handed), "graphs handed,", sum(1 for h in handed if h["error"]), "failed,",
          truth["unique_graphs"], "unique graphs")


if __name__ == "__main__":
    main()
