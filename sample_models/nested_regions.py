"""Four identical blocks, each block's forward a torch.compiler.nested_compile_region: the first block's input is
the model's input (no grad), the later blocks' are block outputs, so Dynamo traces the first call apart."""
import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    @torch.compiler.nested_compile_region
    def forward(self, x):
        return torch.relu(self.lin(x)) + x


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


torch.manual_seed(0)
model = Stack()
example_inputs = (torch.randn(4, 16),)
