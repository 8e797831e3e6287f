"""A Hugging Face Llama training step built from a config (random weights, no downloads).

TCINSPECT_LAYERS (default 16) sets the depth; TCINSPECT_HIDDEN (default 2048) the width. On a GPU
it runs in bf16 (the issue's 16-layer, hidden-2048 case); on the CPU pick a small width.

    tcinspect trace bench/models/llama_train.py --device cuda -o llama16.yaml
"""
import os

import torch
import transformers

LAYERS = int(os.environ.get("TCINSPECT_LAYERS", "16"))
HIDDEN = int(os.environ.get("TCINSPECT_HIDDEN", "2048"))
SEQ = int(os.environ.get("TCINSPECT_SEQ", "512"))


class LossOf(torch.nn.Module):
    """The model with labels, returning its loss: what a training step backpropagates."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels):
        return self.m(input_ids=ids, labels=labels).loss


torch.manual_seed(0)
cfg = transformers.LlamaConfig(num_hidden_layers=LAYERS, hidden_size=HIDDEN, intermediate_size=HIDDEN * 11 // 4,
                               num_attention_heads=max(1, HIDDEN // 128), num_key_value_heads=max(1, HIDDEN // 512),
                               vocab_size=32000, max_position_embeddings=SEQ)
model = LossOf(transformers.LlamaForCausalLM(cfg))
if torch.cuda.is_available():
    model = model.to(torch.bfloat16)
ids = torch.randint(0, cfg.vocab_size, (1, SEQ))
example_inputs = (ids, ids)
