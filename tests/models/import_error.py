import torch
import not_a_real_module_xyz  # noqa: F401

model = torch.nn.Linear(2, 2)
example_inputs = (torch.randn(1, 2),)
