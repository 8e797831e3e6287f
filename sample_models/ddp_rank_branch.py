"""One rank takes a branch the others don't: `tcinspect check sample_models/ddp_rank_branch.py --nproc 2`.

A DDP model whose forward logs on rank 1 only. The print is a graph break, so rank 1 compiles two
graphs where rank 0 compiles one, and guards on `self.rank` differ: tcinspect's divergence section
names the first compile where the ranks differ, and `check --nproc` fails on it. Runs on CPUs (gloo).
"""
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")


class Net(nn.Module):
    def __init__(self, rank: int):
        super().__init__()
        self.rank = rank
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 8)

    def forward(self, x):
        h = self.fc1(x).relu()
        if self.rank == 1:  # a rank-dependent branch: only rank 1 reports its activations
            print(f"rank {self.rank}: mean activation {h.mean().item():.3f}")
        return self.fc2(h)


torch.manual_seed(0)
model = DDP(Net(dist.get_rank()))
example_inputs = (torch.randn(16, 64),)
