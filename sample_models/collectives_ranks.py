"""Collectives inside the compiled graph, and a rank that runs one more: `tcinspect trace sample_models/collectives_ranks.py --nproc 2`.

Functional collectives (``torch.distributed._functional_collectives``) are traced into the graph: an all-reduce
and an all-gather on the default group, then on rank 1 only a further all-reduce on a group of its own. The
ranks' compiled graphs then run different collectives, which is how a compile-induced desync starts; here it
cannot hang (the extra one is on a one-rank group), so tcinspect's divergence names it. On GPUs each rank
takes its own GPU (torchrun's LOCAL_RANK) with NCCL; without CUDA the ranks run on CPUs with gloo.
"""
import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl" if device == "cuda" else "gloo")
rank = dist.get_rank()
own_group = [dist.new_group([r]) for r in range(dist.get_world_size())]  # every rank creates every group


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        h = funcol.all_reduce(self.fc(x), "sum", dist.group.WORLD)
        g = funcol.all_gather_tensor(h, 0, dist.group.WORLD)
        if rank == 1:  # rank 1 only: one more collective, on its own group
            g = funcol.all_reduce(g, "sum", own_group[1])
        return g.relu().sum()


torch.manual_seed(0)
model = Net().to(device)
example_inputs = (torch.randn(4, 16, device=device),)
