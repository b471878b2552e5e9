"""LoRA targets (``--lora-targets``): a name that matches no module is refused (peft drops it
in silence where another matches), ``all-linear`` is peft's every linear layer, and an
adapter on the embeddings trains (its weights were missed, and the optimizer got none)."""

from __future__ import annotations

import pytest

from agents.trainable_lm import TrainableLM, default_lora, tiny_model

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)


def team(*targets: str) -> TrainableLM:
    model, tokenizer = tiny_model(seed=0)
    return TrainableLM(model, tokenizer, ["agent_0", "agent_1"], lora=default_lora(4, 8.0, targets))


def test_a_target_that_names_no_module_is_refused_naming_the_linear_layers():
    with pytest.raises(ValueError, match=r"LoRA target 'foo_proj' names no module .* q_proj, up_proj, v_proj, or give all-linear"):
        team("q_proj", "foo_proj")


def test_all_linear_puts_an_adapter_on_every_linear_layer_of_the_blocks():
    lm = team("all-linear")
    adapted = {name.split(".lora_A")[0].rpartition(".")[2] for name, _ in lm.seats["agent_0"].model.named_parameters() if ".lora_A." in name}
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_an_adapter_on_the_embeddings_is_trained():
    lm = team("embed_tokens", "q_proj")
    named = dict(lm.seats["agent_0"].model.named_parameters())
    embedding = [named[name] for name in named if "lora_embedding" in name and name.endswith(".agent_0")]
    weights = lm.parameters("agent_0")
    assert len(embedding) == 2 and all(any(w is e for w in weights) for e in embedding)
    assert {id(w) for w in weights}.isdisjoint({id(w) for w in lm.parameters("agent_1")})
    prompt = lm.encode(CHAT)
    logp, mask = lm.logprobs("agent_0", [prompt], [prompt[:5]])
    (-(logp * mask).sum()).backward()
    assert any(e.grad is not None and e.grad.abs().sum() > 0 for e in embedding)  # one factor starts at 0
