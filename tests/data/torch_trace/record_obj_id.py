"""Record a 2-rank job whose ranks recompile on an object id (``___check_obj_id``), for tests/test_mixed_runs.py.

    python tests/data/torch_trace/record_obj_id.py [--dest DIR]

Runs the job below under torchrun (2 ranks, gloo, CPU) with TORCH_TRACE set: each rank compiles
``apply(fn, x)`` (a functional all-reduce, ``aot_eager``) with ``fn=double``, then again with ``fn=halve``.
Dynamo guards the first compile on ``fn``'s object id, so the second call recompiles, and the recompile reason
(``___check_obj_id(fn, 1403…)``) and the ID_MATCH guards hold ids that differ from process to process: the
two ranks ran the same program and compiled the same graphs. Writes DIR (default
torch-<version>/obj_id_recompile/): each rank's log with paths rewritten and md5s recomputed, as record.py does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _rank() -> None:
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    dist.init_process_group("gloo")

    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def halve(x: torch.Tensor) -> torch.Tensor:
        return x / 2

    @torch.compile(backend="aot_eager")
    def apply(fn, x):  # type: ignore[no-untyped-def]
        return funcol.all_reduce(fn(x) + 1, "sum", dist.group.WORLD)

    x = torch.ones(8)
    apply(double, x)
    apply(halve, x)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path)
    args = parser.parse_args()
    dest = args.dest or HERE / f"torch-{torch.__version__.split('+')[0]}" / "obj_id_recompile"
    dest.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    from record import save_rank_logs

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = dict(os.environ, TORCH_TRACE=str(t / "trace"))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                        __file__, "--rank"], env=env, check=True)
        save_rank_logs(t / "trace", dest)
    print(f"recorded -> {dest}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank"]:
        _rank()
    else:
        main()
