"""`model` is the nn.Module class, not an instance of it (forgot the parentheses)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


model = Net
example_inputs = (torch.randn(2, 4),)
