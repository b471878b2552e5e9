"""The compiled decoding step's attention (agents.trainable_lm.attention): a one-token query
of grouped heads attends on the cache's key/value heads, not on copies of them, and
computes what transformers' eager SDPA computes; any other call is transformers' own."""

from __future__ import annotations

import pytest
import torch
from transformers.integrations import sdpa_attention

from agents.trainable_lm import tiny_model
from agents.trainable_lm.attention import NAME, packed_sdpa, use_packed_attention


class Grouped(torch.nn.Module):
    num_key_value_groups = 3
    is_causal = True


def inputs(rows=2, kv_heads=2, length=1, positions=7, dim=8, seed=0):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(rows, kv_heads * 3, length, dim, generator=generator)
    key = torch.randn(rows, kv_heads, positions, dim, generator=generator)
    value = torch.randn(rows, kv_heads, positions, dim, generator=generator)
    mask = torch.ones(rows, 1, length, positions, dtype=torch.bool)
    mask[0, :, :, :3] = False  # a left-padded row
    return query, key, value, mask


@pytest.fixture
def key_heads_seen(monkeypatch):
    """The key/value heads each SDPA call gets, with the call taken as traced by torch.compile."""
    seen: list[int] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def recording(query, key, value, **kwargs):
        seen.append(key.shape[1])
        return sdpa(query, key, value, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    monkeypatch.setattr(sdpa_attention, "is_torchdynamo_compiling", lambda: True)
    return seen


def test_a_compiled_one_token_step_attends_on_the_key_value_heads_and_computes_sdpas_result(key_heads_seen):
    query, key, value, mask = inputs()
    packed, _ = packed_sdpa(Grouped(), query, key, value, mask, scaling=0.3)
    assert key_heads_seen == [2]  # the cache's heads, not 6 copies
    # transformers' own function, traced: the keys repeated to the query heads
    expected, _ = sdpa_attention.sdpa_attention_forward(Grouped(), query, key, value, mask, scaling=0.3)
    assert key_heads_seen == [2, 6]
    assert packed.shape == expected.shape == (2, 1, 6, 8)
    torch.testing.assert_close(packed, expected)


@pytest.mark.parametrize(("length", "compiling"), [(1, False), (4, True), (4, False)])
def test_other_calls_are_transformers_own(key_heads_seen, monkeypatch, length, compiling):
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: compiling)
    monkeypatch.setattr(sdpa_attention, "is_torchdynamo_compiling", lambda: compiling)
    query, key, value, mask = inputs(length=length)
    got, _ = packed_sdpa(Grouped(), query, key, value, mask)
    expected, _ = sdpa_attention.sdpa_attention_forward(Grouped(), query, key, value, mask)
    assert key_heads_seen[0] == key_heads_seen[1]
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_a_model_with_sdpa_attends_through_it_and_gives_the_same_logits():
    model, tokenizer = tiny_model(seed=0)
    ids = torch.tensor([tokenizer("a small prompt")["input_ids"]])
    before = model(input_ids=ids).logits
    use_packed_attention(model.config)
    assert model.config._attn_implementation == NAME
    torch.testing.assert_close(model(input_ids=ids).logits, before, rtol=0, atol=0)
    assert "_attn_implementation" not in model.config.to_json_string()  # never saved as ours

    eager, _ = tiny_model(seed=0)
    eager.config._attn_implementation = "eager"
    use_packed_attention(eager.config)
    assert eager.config._attn_implementation == "eager"
