import pickle

import torch


def model(x):
    y = x * 2
    size = len(pickle.dumps({"n": 3}))
    return y + size


example_inputs = (torch.randn(8),)
