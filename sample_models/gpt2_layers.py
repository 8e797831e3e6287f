"""A tiny GPT-2 from transformers (random weights, no download) with LAYERS blocks (default 2): its guards
grow with the number of blocks. `LAYERS=8 tcinspect guards sample_models/gpt2_layers.py --per-call 5`."""
import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel

LAYERS = int(os.environ.get("LAYERS", "2"))

torch.manual_seed(0)
config = GPT2Config(n_layer=LAYERS, n_embd=32, n_head=2, vocab_size=128, n_positions=64, bos_token_id=0,
                    eos_token_id=0)
model = GPT2LMHeadModel(config).eval()
example_inputs = (torch.randint(0, 128, (2, 16)),)
# a shorter sequence: a second graph (a recompile), so each call may have to try two cache entries
input_sets = [(torch.randint(0, 128, (2, 8)),)]
