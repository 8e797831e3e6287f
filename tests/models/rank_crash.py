"""Three ranks under torchrun: rank 0 finishes, rank 1 crashes, rank 2 hangs until torchrun stops it.

Rank 1 crashes only once rank 0 has written its report and rank 2 is in its loop, so that what each
rank reached is certain.
"""
import ctypes
import os
import time
from pathlib import Path

import torch

RANK = int(os.environ["RANK"])


@torch._dynamo.disable  # runs eagerly: a graph break, then the rank's own behaviour
def misbehave(rank):
    ranks_dir = Path(os.environ["TCINSPECT_RANKS_DIR"])
    if rank == 1:
        for _ in range(1200):
            if (ranks_dir / "rank-0.json").exists() and (ranks_dir / "rank-2.looping").exists():
                break
            time.sleep(0.1)
        ctypes.string_at(0)  # segfault
    if rank == 2:
        (ranks_dir / "rank-2.looping").touch()
        while True:
            time.sleep(0.05)


def model(x):
    y = x.sin()
    misbehave(RANK)
    return y.cos()


example_inputs = (torch.randn(4),)
