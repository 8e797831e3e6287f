"""The seed article's export matrix: one Triton SiLU kernel, called two ways (needs a GPU).

``model_triton_op`` calls it through ``torch.library.triton_op`` + ``wrap_triton`` (transparent to
torch.compile and torch.export); ``model_plain`` calls the ``@triton.jit`` kernel directly. The
article's finding: strict export (TorchDynamo) traces both; non-strict export fails on the plain
call and asks for the kernel to be wrapped.

    tcinspect export sample_models/silu_export_matrix.py --model model_triton_op --dynamic-dim 0
    tcinspect export sample_models/silu_export_matrix.py --model model_plain --dynamic-dim 0
    tcinspect verify sample_models/silu_export_matrix.py --model model_triton_op --no-backward
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
    x_f32 = x.to(tl.float32)  # the math in float32, then back to the input's dtype
    out = (x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))).to(x.dtype)
    tl.store(out_ptr + offsets, out, mask=mask)


try:
    @triton_op("tcinspect_samples::silu_export", mutates_args={})
    def triton_silu_triton_op(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()

        def grid(meta):
            return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

        wrap_triton(triton_silu_kernel)[grid](x, out, n_elements, BLOCK_SIZE=1024)
        return out
except RuntimeError:  # already registered by an earlier import in this process
    pass


def triton_silu_pytorch_op(x: torch.Tensor) -> torch.Tensor:
    """The same kernel, not registered: Dynamo traces into it; non-strict export cannot."""
    out = torch.empty_like(x)
    n_elements = x.numel()

    def grid(meta):
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    triton_silu_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024)
    return out


class CustomModel(torch.nn.Module):
    def __init__(self, silu_op: str, in_features: int = 128, out_features: int = 64):
        super().__init__()
        self.linear1 = torch.nn.Linear(in_features, out_features)
        self.linear2 = torch.nn.Linear(out_features, in_features)
        self.silu_op = silu_op

    def forward(self, x):
        x = self.linear1(x)
        if self.silu_op == "triton_op":
            x = torch.ops.tcinspect_samples.silu_export.default(x)
        else:
            x = triton_silu_pytorch_op(x)
        return self.linear2(x)


def _build(silu_op: str) -> CustomModel:
    torch.manual_seed(42)
    m = CustomModel(silu_op).to(dtype=torch.bfloat16)
    for p in m.parameters():
        torch.nn.init.uniform_(p, -1.0, 1.0)
    return m.eval().requires_grad_(False)  # inference, as in the article


model_triton_op = _build("triton_op")
model_plain = _build("plain")
model = model_triton_op
example_inputs = (torch.randn(8, 128, dtype=torch.bfloat16),)
