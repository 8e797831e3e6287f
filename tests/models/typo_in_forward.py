"""A typo inside forward (`rleu`): Dynamo re-raises it at the `def` line; the report must name line 12."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        return y.rleu()


model = Net()
example_inputs = (torch.randn(4, 8),)
