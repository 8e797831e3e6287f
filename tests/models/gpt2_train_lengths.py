"""A 2-layer GPT-2 (transformers, random weights) trained on four sequence lengths: the second length makes the
length a symbol, and compiling its backward evaluates guards such as Eq(s50, 16) that no later call checks."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=256, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)
example_inputs = (torch.randint(0, config.vocab_size, (2, 8)),)
input_sets = [(torch.randint(0, config.vocab_size, (2, n)),) for n in (16, 24, 32)]
