"""FSDP2 (`fully_shard`): `tcinspect trace sample_models/fsdp2_mlp.py --nproc 2`.

`fully_shard` shards each block's parameters across the ranks: they are all-gathered before a block runs and
their gradients reduce-scattered after its backward, by FSDP2's hooks, which torch.compile leaves to run
eagerly, so the compiled graphs hold the blocks' computation and no collective. On GPUs each rank takes its
own GPU (torchrun's LOCAL_RANK) with NCCL; without CUDA the ranks run on CPUs with gloo.
"""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.fsdp import fully_shard

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl" if device == "cuda" else "gloo")


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class MLP(nn.Module):
    def __init__(self, dim: int = 256, depth: int = 4, classes: int = 10):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


torch.manual_seed(0)  # the same initial weights on every rank before sharding
model = MLP().to(device)
for block in model.blocks:
    fully_shard(block)  # one all-gather / reduce-scatter group per block
fully_shard(model)  # the rest (the head)

torch.manual_seed(dist.get_rank())  # each rank its own batch
example_inputs = (torch.randn(32, 256, device=device),)
