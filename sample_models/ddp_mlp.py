"""A DDP training step of a small MLP, for `tcinspect trace sample_models/ddp_mlp.py --nproc 2`.

Run it under torchrun (tcinspect's --nproc does): the file starts its process group from torchrun's
environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): with gloo on CPUs, or on GPUs, where each rank
takes its own GPU (LOCAL_RANK), with NCCL. tcinspect
compiles the DDP module and runs forward, loss and backward; DDP all-reduces the gradients in
backward, bucket by bucket.

DDPOptimizer splits the compiled graph where DDP's gradient buckets end, so that each bucket's
all-reduce can overlap the rest of backward. `bucket_cap_mb=1` makes each 512x512 layer (1 MiB of
f32 weights) a bucket of its own; at the default 25 MiB this MLP would stay one graph.
"""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl" if device == "cuda" else "gloo")


class MLP(nn.Module):
    def __init__(self, width: int = 512, depth: int = 4, classes: int = 10):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x, target):
        return F.cross_entropy(self.head(self.layers(x)), target)


torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
model = DDP(MLP().to(device), bucket_cap_mb=1)

torch.manual_seed(dist.get_rank())  # each rank its own batch, as a DistributedSampler would give
example_inputs = (torch.randn(32, 512, device=device), torch.randint(0, 10, (32,), device=device))
