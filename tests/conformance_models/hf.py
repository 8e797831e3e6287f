"""Hugging Face architectures with tiny random configs (no downloads): (model, example inputs) builders.

Each is small enough to compile in seconds on a CPU: 1-2 layers, hidden size 32-64, a vocabulary
of 128-256 and sequences of 8-16 tokens. Dropout is off (eval mode) so eager and compiled agree.
"""

from __future__ import annotations

import torch


def _ids(vocab: int, batch: int = 2, seq: int = 16) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(cfg).eval(), (_ids(256),)


def gpt2_wide():
    """GPT-2 with a 1,000-token vocabulary and 128-wide embeddings, 64-token sequences: large enough
    that Inductor's float32 gradients differ from eager's beyond torch.testing's default tolerances."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=128, n_head=2, vocab_size=1000, n_positions=128, bos_token_id=0,
                     eos_token_id=0)
    return GPT2LMHeadModel(cfg).eval(), (_ids(1000, batch=4, seq=64),)


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                     vocab_size=256, max_position_embeddings=64)
    return BertModel(cfg).eval(), (_ids(256),)


def longformer():
    from transformers import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    cfg = LongformerConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                           vocab_size=128, attention_window=[4], max_position_embeddings=64, pad_token_id=1)
    return LongformerModel(cfg).eval(), (_ids(128, seq=8),)


def longformer_global():
    """Longformer with a global-attention token and 32 tokens: Inductor (torch 2.13) fails on five of its
    frames with DataDependentOutputException, and Dynamo runs them eagerly."""
    from transformers import LongformerConfig, LongformerModel

    torch.manual_seed(0)
    cfg = LongformerConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                           vocab_size=128, attention_window=[4, 4], max_position_embeddings=80, pad_token_id=1)
    ids = _ids(128, seq=32)
    global_attention = torch.zeros_like(ids)
    global_attention[:, 0] = 1
    return LongformerModel(cfg).eval(), (ids, None, global_attention)


def switch_transformers():
    """One encoder and one decoder layer, two experts: the encoder's layer routes (sparse), the decoder's is dense
    (``decoder_sparse_step=0``); the router alone breaks the graph and recompiles, and a second sparse layer
    only repeated that at twice the compile time."""
    from transformers import SwitchTransformersConfig, SwitchTransformersModel

    torch.manual_seed(0)
    cfg = SwitchTransformersConfig(num_layers=1, num_decoder_layers=1, d_model=32, d_ff=64, d_kv=16, num_heads=2,
                                   num_experts=2, expert_capacity=8, vocab_size=128, decoder_sparse_step=0,
                                   encoder_sparse_step=1)
    model = SwitchTransformersModel(cfg).eval()
    return model, (_ids(128, seq=8), None, _ids(128, seq=4))


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                      intermediate_size=64, vocab_size=128, max_position_embeddings=64)
    return LlamaForCausalLM(cfg).eval(), (_ids(128),)


def t5():
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    cfg = T5Config(num_layers=1, num_decoder_layers=1, d_model=32, d_ff=64, d_kv=16, num_heads=2, vocab_size=128,
                   decoder_start_token_id=0, pad_token_id=0)
    return T5Model(cfg).eval(), (_ids(128, seq=8), None, _ids(128, seq=4))


def mistral():
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    cfg = MistralConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                        intermediate_size=64, vocab_size=128, max_position_embeddings=64, sliding_window=8)
    return MistralForCausalLM(cfg).eval(), (_ids(128),)


def mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    cfg = MixtralConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                        intermediate_size=64, vocab_size=128, max_position_embeddings=64, num_local_experts=4,
                        num_experts_per_tok=2)
    return MixtralForCausalLM(cfg).eval(), (_ids(128),)


def qwen2_moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2MoeConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                         intermediate_size=64, moe_intermediate_size=32, shared_expert_intermediate_size=32,
                         num_experts=4, num_experts_per_tok=2, vocab_size=128, max_position_embeddings=64)
    return Qwen2MoeForCausalLM(cfg).eval(), (_ids(128),)


def whisper():
    from transformers import WhisperConfig, WhisperModel

    torch.manual_seed(0)
    cfg = WhisperConfig(encoder_layers=1, decoder_layers=1, d_model=32, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                        max_source_positions=16, max_target_positions=16, vocab_size=128, pad_token_id=0,
                        decoder_start_token_id=1)
    features = torch.randn(1, 16, 32, generator=torch.Generator().manual_seed(0))
    return WhisperModel(cfg).eval(), (features, None, _ids(128, batch=1, seq=4))


def vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    cfg = ViTConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64, image_size=16,
                    patch_size=4, num_channels=3)
    return ViTModel(cfg).eval(), (torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0)),)


def big_bird():
    from transformers import BigBirdConfig, BigBirdModel

    torch.manual_seed(0)
    cfg = BigBirdConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                        vocab_size=128, max_position_embeddings=128, block_size=4, num_random_blocks=2,
                        attention_type="block_sparse")
    return BigBirdModel(cfg).eval(), (_ids(128, seq=64),)


BUILDERS = {"gpt2": gpt2, "bert": bert, "longformer": longformer, "switch_transformers": switch_transformers,
            "llama": llama, "t5": t5, "mistral": mistral, "mixtral": mixtral, "qwen2_moe": qwen2_moe,
            "whisper": whisper, "vit": vit, "big_bird": big_bird, "longformer_global": longformer_global}
