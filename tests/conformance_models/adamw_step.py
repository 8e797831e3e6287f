"""A compiled AdamW step, as a training loop writes it: `model` is the function that calls `opt.step()`
on gradients already computed. Dynamo traces torch's own `_single_tensor_adam`, whose `step_t += 1` is an
in-place node of the graph for every parameter."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
opt = torch.optim.AdamW(net.parameters(), lr=1e-3, foreach=False)
net(torch.randn(8, 16)).pow(2).mean().backward()


def model() -> None:
    opt.step()


example_inputs = ()
