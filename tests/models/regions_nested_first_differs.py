"""The same Llama given its embeddings: the first layer's input is a graph input (no grad), the later layers'
are the layers' outputs, so torch traces the first call apart (subgraph_0) and the other three share subgraph_1."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regions_common  # noqa: E402

llama = regions_common.nested(regions_common.llama())


def model(embeds):
    return llama(inputs_embeds=embeds).logits


example_inputs = (torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(0)),)
