"""The seed tutorial's first exercise: Linear -> ReLU -> x0.5."""
import torch


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(64, 32)

    def forward(self, x):
        x = self.linear(x)
        x = torch.relu(x)
        x = x * 0.5
        return x


torch.manual_seed(0)
model = TinyModel()
example_inputs = (torch.randn(8, 64),)
