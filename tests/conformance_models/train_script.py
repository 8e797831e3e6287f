"""A training script in the usual layout: `model` is assigned under `if __name__ == "__main__":`."""
import torch
from torch import nn


def build() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def train(model: nn.Module, steps: int = 2) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(model, backend="aot_eager")
    loss = torch.zeros(())
    for _ in range(steps):
        loss = step(torch.randn(8, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return float(loss)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = build()
    train(model)
