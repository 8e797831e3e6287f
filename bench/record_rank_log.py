"""Record one TORCH_TRACE log of a larger model, to read as every rank of a job (``rank_scaling.py --source``).

    TORCH_TRACE=/tmp/trace python bench/record_rank_log.py --layers 12   # then pass the log it names

GPT-2 (transformers, random weights from a config: no download) with ``--layers`` layers, compiled with
Inductor and trained two steps on each of two sequence lengths (the second compiles again, dynamic), the
backward through AOTAutograd: the kinds of records a training job's rank logs hold, at the size a real model's
are (the recorded ranks in tests/data are 1-2 MB each). On a GPU when there is one, else the CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    a = ap.parse_args()
    if not os.environ.get("TORCH_TRACE"):
        raise SystemExit("set TORCH_TRACE to a directory: TORCH_TRACE=/tmp/trace python bench/record_rank_log.py")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    config = GPT2Config(n_layer=a.layers, n_embd=a.width, n_head=max(1, a.width // 64), vocab_size=8192,
                        n_positions=512)
    model = GPT2LMHeadModel(config).to(device)
    compiled = torch.compile(model)
    for length in (256, 128):
        for _ in range(2):
            x = torch.randint(0, config.vocab_size, (4, length), device=device)
            compiled(x, labels=x).loss.backward()
    if device == "cuda":
        torch.cuda.synchronize()
    logs = sorted(Path(os.environ["TORCH_TRACE"]).glob("*.log"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise SystemExit(f"torch wrote no log in {os.environ['TORCH_TRACE']}")
    print(f"{logs[-1]} ({logs[-1].stat().st_size / 1e6:.1f} MB, torch {torch.__version__}, {device})", file=sys.stderr)
    print(logs[-1])


if __name__ == "__main__":
    main()
