"""A Hugging Face GPT-2 (random weights, tiny) called the way its users call it: with keywords."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=128, n_positions=64))
ids = torch.randint(0, 128, (2, 16))
example_kwargs = dict(input_ids=ids, labels=ids)
# each later call is an (args, kwargs) pair (a dict alone: keywords only)
input_sets = [dict(input_ids=ids[:, :8], labels=ids[:, :8])]
