"""Record a 2-rank job whose ranks run their compiled graphs in different orders, for tests/test_graph_execution.py.

    python tests/data/torch_trace/record_graph_execution.py [--dest DIR]

Runs the job below under torchrun (2 ranks, gloo, CPU, Inductor with a cold cache of its own) with TORCH_TRACE
set. Each rank compiles ``head`` and calls it once, then, inside
``torch._inductor.debug.record_and_log_graph_execution_order()``, calls three compiled functions: rank 0
``scale, shift, head, scale``, rank 1 ``scale, head, shift, scale``. ``scale`` and ``shift`` are compiled inside
the block, so torch knows their compile ids; ``head`` was compiled before it, so its entries have none. On leaving
the block torch logs one ``graph_execution`` artifact per rank. Torch's own list (``GRAPH_EXECUTION_ORDER``, taken
just before the block ends) is kept beside the logs as ``truth.json``, the oracle. Writes DIR (default
torch-<version>/graph_execution/): each rank's log with paths rewritten and md5s recomputed, as record.py does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _rank(out: str) -> None:
    import torch
    import torch._inductor.debug as inductor_debug
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()

    @torch.compile(backend="inductor")
    def head(x: torch.Tensor) -> torch.Tensor:
        return x.cos() + 1

    @torch.compile(backend="inductor")
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x.relu() * 2

    @torch.compile(backend="inductor")
    def shift(x: torch.Tensor) -> torch.Tensor:
        return x.sin() - 1

    x = torch.ones(8)
    head(x)
    with inductor_debug.record_and_log_graph_execution_order():
        for fn in (scale, shift, head, scale) if rank == 0 else (scale, head, shift, scale):
            fn(x)
        order = [dict(e) for e in inductor_debug.GRAPH_EXECUTION_ORDER or ()]
    Path(out, f"rank{rank}.json").write_text(json.dumps(order))
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path)
    args = parser.parse_args()
    dest = args.dest or HERE / f"torch-{torch.__version__.split('+')[0]}" / "graph_execution"
    dest.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    from record import save_rank_logs

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = dict(os.environ, TORCH_TRACE=str(t / "trace"), TORCHINDUCTOR_CACHE_DIR=str(t / "inductor"))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                        __file__, "--rank", str(t)], env=env, check=True)
        save_rank_logs(t / "trace", dest, [(str(t), "/tmp/record")])
        truth = {"torch": torch.__version__, "graph_execution_order": {
            r: json.loads((t / f"rank{r}.json").read_text()) for r in range(2)}}
        (dest / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"recorded -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        _rank(sys.argv[2])
    else:
        main()
