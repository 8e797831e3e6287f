"""An input set that is not an (args, kwargs) pair beside `example_kwargs`: one line, exit 2."""
import torch

model = torch.nn.Linear(4, 2)
example_kwargs = {"input": torch.randn(2, 4)}
input_sets = [(torch.randn(3, 4),)]
