"""LeNet whose activations are a user Triton ReLU inside a custom autograd.Function (needs a GPU).

From the seed article "How PyTorch Sees Your Triton Kernel": Dynamo wraps the Function in
autograd_function_apply, AOTAutograd lowers the kernel to triton_kernel_wrapper_functional,
and Inductor launches it as a user kernel beside its own.
"""
import torch
import triton
import triton.language as tl
from torch import nn

device = "cuda"


@triton.jit
def relu_kernel(input_ptr, output_ptr, num_elem, block_size: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * block_size
    offsets = block_start + tl.arange(0, block_size)
    mask = offsets < num_elem
    x = tl.load(input_ptr + offsets, mask=mask)
    z = tl.maximum(x, 0)
    tl.store(output_ptr + offsets, z, mask=mask)


def triton_relu(x):
    output = torch.empty_like(x)
    num_elem = x.numel()
    grid = lambda meta: (triton.cdiv(num_elem, meta["block_size"]),)  # noqa: E731
    relu_kernel[grid](x, output, num_elem, block_size=1024)
    return output


class TritonReLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return triton_relu(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad = grad_output.clone()
        grad[x <= 0] = 0
        return grad


class TritonReLU(nn.Module):
    def forward(self, x):
        return TritonReLUFn.apply(x)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), TritonReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(6, 16, kernel_size=5, padding=2), TritonReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.fc = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 7 * 7, 120), TritonReLU(), nn.Linear(120, 84), TritonReLU(), nn.Linear(84, 10),
        )

    def forward(self, x):
        return self.fc(self.convnet(x))


torch.manual_seed(0)
model = LeNet()
example_inputs = (torch.randn(4, 1, 28, 28),)
