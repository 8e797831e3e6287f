"""A SiLU Triton kernel registered with torch.library.triton_op + wrap_triton (needs a GPU).

From the seed article on transparent Triton tracing: the op is visible to Dynamo, AOTAutograd
and Inductor (bf16, inference, fullgraph-compatible).
"""
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

device = "cuda"


@triton.jit
def triton_silu_kernel(in_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    tl.store(out_ptr + offsets, out, mask=mask)


try:
    @triton_op("tcinspect_samples::silu", mutates_args={})
    def triton_silu(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()

        def grid(meta):
            return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

        wrap_triton(triton_silu_kernel)[grid](x, out, n_elements, BLOCK_SIZE=1024)
        return out
except RuntimeError:  # already registered by an earlier import in this process
    pass


class CustomModel(torch.nn.Module):
    def __init__(self, in_features=128, out_features=64):
        super().__init__()
        self.linear1 = torch.nn.Linear(in_features, out_features)
        self.linear2 = torch.nn.Linear(out_features, in_features)

    def forward(self, x):
        x = self.linear1(x)
        x = torch.ops.tcinspect_samples.silu.default(x)
        return self.linear2(x)


torch.manual_seed(0)
model = CustomModel().to(torch.bfloat16).eval().requires_grad_(False)  # inference, as in the article
example_inputs = (torch.randn(8, 128, dtype=torch.bfloat16),)
