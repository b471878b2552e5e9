"""The transformers backend on the SmolLM2 GGUF (dequantized), on the CPU."""

from __future__ import annotations

import re

import pytest
from agent_fakes import make_turn

from agents import LLMAgent, make_backend, prompts
from agents.base import GenerationRequest, LogprobRequest
from agents.llamacpp_backend import default_model_path


@pytest.fixture(scope="module")
def backend():
    return make_backend("transformers", model=default_model_path(), device="cpu", batch_size=4)


def chat(text: str):
    return ({"role": "user", "content": text},)


def test_batched_generation_is_seeded_and_counted(backend):
    assert re.fullmatch(r"transformers:SmolLM2-135M-Instruct\.Q4_1-float32@sha256:[0-9a-f]{32}", backend.model_id)
    requests = [
        GenerationRequest(chat("What is 12 + 7?"), max_tokens=12, seed=1),
        GenerationRequest(chat("Name a color."), max_tokens=5, seed=2),
        GenerationRequest(chat("What is 12 + 7?"), max_tokens=12, seed=1),
        GenerationRequest(chat("Hi"), max_tokens=16, temperature=0.0, seed=3),
        GenerationRequest(chat("Count: 1, 2, 3,"), max_tokens=20, seed=4, stop=(",",)),
    ]  # 5 requests: two batches of at most 4
    first = backend.generate(requests)
    assert first == backend.generate(requests)
    assert first[0] == first[2]  # same request and seed in one batch, different rows
    assert first[1].completion_tokens == 5 and first[1].finish_reason == "length"
    assert all(0 < g.completion_tokens <= r.max_tokens for g, r in zip(first, requests))
    assert all(g.prompt_tokens > 5 for g in first)
    assert first[3].finish_reason == "stop" and first[3].completion_tokens < 16  # greedy reply ends
    assert "," not in first[4].text


def test_batched_logprobs_match_one_at_a_time(backend):
    asks = [
        LogprobRequest(chat("Is 2 + 2 = 4? Answer Yes or No."), prompts.CRITIC_CANDIDATES),
        LogprobRequest(
            chat("A much longer question, padded on the left in the batch: is 3 > 5? Yes or No?"),
            prompts.CRITIC_CANDIDATES,
        ),
    ]
    together = backend.next_token_logprobs(asks)
    alone = [backend.next_token_logprobs([ask])[0] for ask in asks]
    for a, b in zip(together, alone):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-3)
        assert a.prompt_tokens == b.prompt_tokens
        assert all(lp < 0 for lp in a.logprobs)


def test_agent_round_on_transformers(backend):
    agent = LLMAgent(backend, max_tokens=8)
    answers = agent.solve([make_turn(agent=a, seed=a) for a in range(3)])
    confidences = agent.introspect([make_turn(previous=a.text) for a in answers])
    assert all(0.0 <= c.value <= 1.0 for c in confidences)


def test_missing_model_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="a path is never looked up on the Hugging Face hub"):
        make_backend("transformers", model=tmp_path / "absent")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id, as train text --model takes it (a real client's
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # transformers: team refused one); the cache is empty
    with pytest.raises(FileNotFoundError, match=r"'nobody/no-such-model' is no local model .*HF_HUB_OFFLINE is set"):
        make_backend("transformers", model="nobody/no-such-model")
