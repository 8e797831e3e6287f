"""Tensor parallelism (DTensor) with sequence-parallel blocks: `tcinspect trace sample_models/tp_mlp.py --nproc 2`.

Each block's first linear is column-parallel and its second row-parallel (`parallelize_module`), with the
activations between blocks sharded by rows (sequence parallelism): every block all-gathers its input's rows
before the first linear and reduce-scatters the second's output, and backward runs the mirror image. The
collectives are traced into the compiled graphs (`trace --stage collectives` lists them). On GPUs each rank
takes its own GPU (torchrun's LOCAL_RANK) with NCCL; without CUDA the ranks run on CPUs with gloo.
"""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl" if device == "cuda" else "gloo")
mesh = init_device_mesh(device, (dist.get_world_size(),))


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class MLP(nn.Module):
    def __init__(self, dim: int = 64, depth: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x.sum()


torch.manual_seed(0)  # the same weights on every rank before they are split
model = MLP().to(device)
for block in model.blocks:
    parallelize_module(block, mesh, {"fc1": ColwiseParallel(input_layouts=Shard(0)),  # all-gather the rows in
                                     "fc2": RowwiseParallel(output_layouts=Shard(0))})  # reduce-scatter them out

torch.manual_seed(dist.get_rank())  # each rank its own rows of the sequence
example_inputs = (torch.randn(8, 64, device=device),)
