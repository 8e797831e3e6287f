"""torch.cond in the graph: Inductor's FX graph cache refuses to cache a HigherOrderOperator it does not mark
cacheable (torch/_inductor/codecache.py, CacheabilityValidator.validate_graph), so every run compiles it."""
import torch


def model(x):
    return torch.cond(x.sum() > 0, lambda t: t.sin() + 1, lambda t: t.cos() - 1, (x,))


example_inputs = (torch.randn(8, 8),)
