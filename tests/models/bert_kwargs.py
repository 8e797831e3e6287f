"""Hugging Face BERT for sequence classification, called with keywords as its users call it.

Its first forward with `labels` sets `config.problem_type` (None -> "single_label_classification"),
so the second call recompiles on a changed attribute of the config.
"""
import torch
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32, num_labels=3)
model = BertForSequenceClassification(config).eval()
ids = torch.randint(0, 64, (2, 8))
example_kwargs = dict(input_ids=ids, labels=torch.tensor([0, 2]))
input_sets = [((), dict(input_ids=ids, labels=torch.tensor([1, 1])))]
