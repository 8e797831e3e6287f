"""A bfloat16 MLP on the GPU: Inductor fuses and reorders its math, so compiled and eager differ in the last bits,
within PyTorch's accuracy rule (verify passes, and nothing is located)."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                            torch.nn.Linear(512, 256)).to(device="cuda", dtype=torch.bfloat16)
example_inputs = (torch.randn(64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True),)
