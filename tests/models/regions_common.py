"""Regional compilation of a tiny Llama (4 decoder layers, random weights): builders, and a backend that
records what torch's own graphs hold (the oracle of tests/test_regions.py)."""
from __future__ import annotations

import types

import torch

LAYERS = 4
#: one entry per graph Dynamo handed the backend: the code it compiled, its invoke_subgraph calls
#: (node name, identifier, body attribute) and how often torch ran the compiled graph
GRAPHS: list[dict] = []


def counting(gm, example_inputs):
    """aot_eager, recording each graph's invoke_subgraph nodes and every run of the compiled graph."""
    from torch._dynamo.backends.debugging import aot_eager

    entry = {"invokes": [(n.name, n.args[1], n.args[0].target) for n in gm.graph.nodes
                         if n.op == "call_function" and n.target is torch.ops.higher_order.invoke_subgraph],
             "runs": 0}
    GRAPHS.append(entry)
    compiled = aot_eager(gm, example_inputs)

    def run(*args):
        entry["runs"] += 1
        return compiled(*args)

    return run


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=LAYERS, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                      intermediate_size=64, vocab_size=128, max_position_embeddings=64)
    return LlamaForCausalLM(cfg).eval()


def nested(model):
    """Each decoder layer's forward as one torch.compiler.nested_compile_region."""
    region = torch.compiler.nested_compile_region(type(model.model.layers[0]).forward)
    for layer in model.model.layers:
        layer.forward = types.MethodType(region, layer)
    return model


def ids():
    return torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
