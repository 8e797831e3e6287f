"""A Hugging Face GPT-2 training step built from a config (random weights, no downloads), CPU-sized.

TCINSPECT_LAYERS (default 2) sets the depth; the width is small so Inductor's CPU compile stays in
minutes on two cores.

    TCINSPECT_LAYERS=16 tcinspect trace bench/models/gpt2_train.py -o gpt2-16.yaml
"""
import os

import torch
import transformers

LAYERS = int(os.environ.get("TCINSPECT_LAYERS", "2"))


class LossOf(torch.nn.Module):
    """The model with labels, returning its loss: what a training step backpropagates."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels):
        return self.m(input_ids=ids, labels=labels).loss


torch.manual_seed(0)
cfg = transformers.GPT2Config(n_layer=LAYERS, n_embd=64, n_head=4, vocab_size=512, n_positions=64,
                              bos_token_id=0, eos_token_id=0)
model = LossOf(transformers.GPT2LMHeadModel(cfg))
ids = torch.randint(0, cfg.vocab_size, (2, 32))
example_inputs = (ids, ids)
