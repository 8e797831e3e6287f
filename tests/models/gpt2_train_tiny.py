"""A 1-layer GPT-2 from transformers with random weights (nothing downloaded): its loss, forward and backward."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=32, vocab_size=128, bos_token_id=0, eos_token_id=0)
lm = GPT2LMHeadModel(config)


def model(ids):
    return lm(ids, labels=ids).loss


example_inputs = (torch.randint(0, config.vocab_size, (2, 8)),)
