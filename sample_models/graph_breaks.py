"""The seed tutorial's "fix the graph breaks" exercise: print, a data-dependent if, sorted()."""
import torch


class BrokenModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.proj(x).sin()
        print(f"Input norm: {x.norm()}")  # break 1: print is a side effect
        if x.sum() > 0:  # break 2: data-dependent control flow
            y = y * 2
        results = sorted([y, y.cos()], key=lambda t: t.sum())  # break 3: sorted over tensors
        return results[0]


torch.manual_seed(0)
model = BrokenModel()
example_inputs = (torch.randn(4, 16).abs(),)
