"""``cast_lm_head_to_fp32`` (TRL's name): the output layer of a 16-bit model computed in
float32 (:mod:`agents.trainable_lm.head`), on a tiny model whose output layer is tied to
its input embedding, as SmolLM2's and Qwen's small models' are."""

from __future__ import annotations

import pytest
import torch

from agents.trainable_lm import TrainableLM, default_lora, tiny_model
from agents.trainable_lm.head import Float32Head, cast_head_to_float32

AGENTS = ["agent_0", "agent_1"]
CHATS = [[{"role": "user", "content": f"What is {k} + {k + 2}?"}] for k in range(3)]
LOGIT_SCALE = 8.0
"""How much larger than at initialization the logits are made: a trained model's logits
span tens, where bfloat16's rounding of them is a tenth of a nat."""


def tied_model():
    """A tiny model whose output layer shares the input embedding's matrix, its logits of
    a trained model's size, with weights that bfloat16 holds exactly (so that a float32
    copy is the same model, not a rounding of it)."""
    model, tokenizer = tiny_model(seed=3, hidden_size=64)
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(LOGIT_SCALE)
        for parameter in model.parameters():
            parameter.copy_(parameter.to(torch.bfloat16).float())
    model.lm_head.weight = model.model.embed_tokens.weight
    model.config.tie_word_embeddings = True
    return model, tokenizer


def policy(dtype: str, cast: bool) -> TrainableLM:
    model, tokenizer = tied_model()
    return TrainableLM(
        model,
        tokenizer,
        AGENTS,
        dtype=dtype,
        cast_lm_head_to_fp32=cast,
        lora=default_lora(rank=4, alpha=8.0),
    )


@pytest.fixture(scope="module")
def completions():
    """Prompts and completions of random tokens (likely and unlikely ones alike)."""
    tokenizer = tiny_model()[1]
    prompts = [tokenizer.encode(f"What is {k} + {k + 2}?") for k in range(len(CHATS))]
    generator = torch.Generator().manual_seed(0)
    tokens = [torch.randint(0, 250, (12,), generator=generator).tolist() for _ in CHATS]
    return prompts, tokens


def scored(lm: TrainableLM, completions) -> torch.Tensor:
    prompts, tokens = completions
    logp, mask = lm.logprobs("agent_0", prompts, tokens)
    return logp.detach()[mask.bool()]


def test_bfloat16_log_probabilities_come_closer_to_float32s_with_the_head_in_float32(completions):
    exact = scored(policy("float32", cast=False), completions)
    rounded = (scored(policy("bfloat16", cast=False), completions) - exact).abs().max()
    upcast = (scored(policy("bfloat16", cast=True), completions) - exact).abs().max()
    assert upcast < rounded


def test_the_sampler_reads_float32_logits_and_its_log_probabilities_agree_with_the_loss():
    lm = policy("bfloat16", cast=True)
    drawn = lm.sample("agent_0", CHATS, [1, 2, 3], max_new_tokens=8, temperature=1.0)
    logp = scored(lm, ([c.prompt_ids for c in drawn], [c.token_ids for c in drawn]))
    sampled = torch.tensor([value for c in drawn for value in c.logprobs])
    torch.testing.assert_close(logp, sampled, atol=0.05, rtol=0)  # bfloat16 passes of other shapes
    head = lm.seats["agent_0"].model.get_base_model().lm_head
    hidden = torch.randn(2, 64).to(torch.bfloat16)
    assert isinstance(head, Float32Head) and head(hidden).dtype is torch.float32


def test_the_tied_embedding_stays_in_bfloat16_and_lora_still_learns(completions):
    lm = policy("bfloat16", cast=True)
    base = lm.seats["agent_0"].model.get_base_model()
    embedding = base.model.embed_tokens.weight
    before = embedding.detach().clone()
    assert base.lm_head.weight is embedding and embedding.dtype is torch.bfloat16
    prompts, tokens = completions
    logp, mask = lm.logprobs("agent_0", prompts, tokens)
    (logp * mask).sum().backward()
    grads = [
        p.grad
        for p in lm.parameters("agent_0")
        if "lora_B" in next(n for n, q in base.named_parameters() if q is p)
    ]
    assert grads and all(g is not None and bool(g.abs().sum() > 0) for g in grads)
    assert torch.equal(embedding, before) and embedding.grad is None  # frozen, untouched


def test_a_float32_model_keeps_its_output_layer_and_a_wrapped_one_is_refused():
    model, _ = tiny_model()
    assert not cast_head_to_float32(model) and type(model.lm_head) is torch.nn.Linear
    model.lm_head = torch.nn.Sequential(model.lm_head)
    with pytest.raises(TypeError, match="not a torch.nn.Linear: cast_lm_head_to_fp32"):
        cast_head_to_float32(model)


def test_the_float32_product_gives_the_gradients_of_a_float32_linear():
    hidden = torch.randn(3, 5, 8, dtype=torch.float64).to(torch.bfloat16).requires_grad_(True)
    weight = torch.randn(11, 8).to(torch.bfloat16).requires_grad_(True)
    bias = torch.randn(11).to(torch.bfloat16).requires_grad_(True)
    head = torch.nn.Linear(8, 11, dtype=torch.bfloat16)
    head.weight, head.bias = torch.nn.Parameter(weight), torch.nn.Parameter(bias)
    head.__class__ = Float32Head
    grad = torch.randn(3, 5, 11)
    head(hidden).backward(grad)
    exact = [t.detach().float().requires_grad_(True) for t in (hidden, weight, bias)]
    torch.nn.functional.linear(*exact).backward(grad)
    for ours, reference in zip((hidden.grad, head.weight.grad, head.bias.grad), exact, strict=True):
        assert ours.dtype is torch.bfloat16
        torch.testing.assert_close(ours.float(), reference.grad.to(torch.bfloat16).float())
