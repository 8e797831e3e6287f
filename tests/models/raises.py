import torch


class Bad(torch.nn.Module):
    def forward(self, x):
        raise ValueError("boom in forward")


model = Bad()
example_inputs = (torch.randn(2),)
