"""A tiny random model for tests and smoke runs (:func:`tiny_model`): nothing is downloaded."""

from __future__ import annotations

import torch

from agents.trainable_lm.extra import MISSING_EXTRA, require_train_extra
from agents.trainable_lm.model import ATTENTION

if MISSING_EXTRA is None:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def tiny_model(
    seed: int = 0, hidden_size: int = 32, layers: int = 2
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A tiny randomly initialized Llama and a byte-level tokenizer with a chat template.

    Nothing is downloaded: for tests, CI runs of the examples and smoke tests of a
    training setup (it writes random bytes, so rewards come from luck).

    Args:
        seed: Seeds the weights.
        hidden_size: Width of the model (divisible by 4).
        layers: Transformer blocks.
    """
    require_train_extra()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={ch: k for k, ch in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<pad>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        attn_implementation=ATTENTION,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.eval(), tokenizer
