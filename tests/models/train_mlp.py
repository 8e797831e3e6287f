"""A training loop (script mode): a compiled MLP, its backward and an optimizer step, three times."""
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
step = torch.compile(net)
for _ in range(3):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    loss = torch.nn.functional.mse_loss(step(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
