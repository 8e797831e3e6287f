"""A 2-layer GPT-2 from transformers with random weights, called with four sequence lengths (16, 12, 20, 28)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=256, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).eval().requires_grad_(False)
example_inputs = (torch.randint(0, config.vocab_size, (2, 16)),)
input_sets = [(torch.randint(0, config.vocab_size, (2, n)),) for n in (12, 20, 28)]
