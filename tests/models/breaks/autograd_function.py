import functools

import torch


def _scaled_forward(ctx, x, scale):
    return x * scale


class Scale(torch.autograd.Function):
    # a forward Dynamo cannot trace: not a plain function (a functools.partial)
    forward = staticmethod(functools.partial(_scaled_forward, scale=2.0))

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0


def model(x):
    y = x.sin()
    return Scale.apply(y).sum()


example_inputs = (torch.randn(8, requires_grad=True),)
