"""layer_norm over ten shapes: compare `--dynamic false` (a graph per shape) with `--dynamic true`."""
import torch


def model(x):
    return torch.nn.functional.layer_norm(x, [x.shape[-1]])


torch.manual_seed(0)
example_inputs = (torch.randn(8, 16),)
input_sets = [(torch.randn(8 * k, 16),) for k in range(2, 11)]
