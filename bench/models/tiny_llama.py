"""A 2-layer Llama from transformers with random weights (hidden 64): bench/per_call.py's model."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=128, max_position_embeddings=64)
model = LlamaForCausalLM(cfg)
example_inputs = (torch.randint(0, 128, (2, 16)),)
