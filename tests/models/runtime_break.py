"""A graph break in the middle: Dynamo compiles the lines before and after a call it must run eagerly (a function
under torch.compiler.disable), so that function's ops run between the two graphs, forward and backward."""
import torch


@torch.compiler.disable
def rescale(y):
    return (y - y.mean()) / (y.std() + 1e-5)


def model(x):
    y = x.sin() + x.cos()
    z = rescale(y)
    return z.relu().sum()


example_inputs = (torch.randn(8, requires_grad=True),)
