"""x[:n] over many n.

With `--dynamic false` every new n fails the guard `n == ...` until Dynamo's recompile limit (8) is
hit and the function runs eagerly. By default (`--dynamic auto`) Dynamo recompiles once and then
treats n as a symbolic size (automatic dynamic shapes): 2 graphs, 1 recompile.
"""
import torch

torch.manual_seed(0)
x = torch.randn(64)


def model(x, n):
    return x[:n].relu() * 2


example_inputs = (x, 1)
input_sets = [(x, n) for n in range(2, 12)]
