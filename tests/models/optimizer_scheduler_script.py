"""A training loop whose compiled step calls an AdamW step under a LambdaLR scheduler: three calls.

The scheduler changes `param_groups[0]['lr']`, a Python float the optimizer's graph was specialised on
(a recompile), and wraps `opt.step` in a function Dynamo skips on purpose (a graph break).
"""
import torch

torch.manual_seed(0)
net = torch.nn.Linear(8, 4)
opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (s + 1))


@torch.compile(backend="eager")
def step():
    opt.step()


STEPS = 3
for _ in range(STEPS):
    net(torch.randn(2, 8)).sum().backward()
    step()
    sched.step()
    opt.zero_grad()
