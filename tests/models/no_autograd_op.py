"""A custom op with no autograd formula, in a model whose output requires grad: backward fails eagerly too."""
import torch


@torch.library.custom_op("tcinspect_tests::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@double.register_fake
def _(x):
    return torch.empty_like(x)


lin = torch.nn.Linear(4, 4)


def model(x):
    return double(lin(x))


example_inputs = (torch.randn(2, 4),)
