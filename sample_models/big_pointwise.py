"""A large pointwise model (needs a GPU): GELU(x) * y + 1 over 64 Mi float32 elements.

Inductor fuses it into one Triton kernel that reads 512 MiB and writes 256 MiB, so
`tcinspect codegen sample_models/big_pointwise.py --bench` shows a kernel near the memory
bandwidth roof.
"""
import torch

device = "cuda"
N = 64 * 2**20


def model(x, y):
    return torch.nn.functional.gelu(x) * y + 1.0


def example_inputs():
    torch.manual_seed(0)
    return torch.randn(N, device=device), torch.randn(N, device=device)
