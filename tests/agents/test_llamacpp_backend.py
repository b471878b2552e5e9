"""A real SmolLM2-135M team round through llama.cpp (short answers, two questions)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from agent_fakes import Counting, make_turn

from agents import CachedBackend, LLMAgent
from agents.base import PeerAnswer
from agents.llamacpp_backend import LlamaCppBackend, default_model_path, usable_cpus

QUESTIONS = ("What is 12 + 7?", "What is 9 * 3?")
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def smollm2():
    return LlamaCppBackend(n_ctx=1024)


def solve_turns():
    """Round 0 of 3 agents on each question."""
    return [
        make_turn(q, agent=a, seed=1000 + 10 * k + a)
        for k, q in enumerate(QUESTIONS)
        for a in range(3)
    ]


def run_round(agent):
    """Solve (3 agents x 2 questions), introspect, then refine agent 0 of each question."""
    turns = solve_turns()
    answers = agent.solve(turns)
    judged = [
        make_turn(t.question, agent=t.agent, seed=t.seed, previous=a.text)
        for t, a in zip(turns, answers)
    ]
    confidences = agent.introspect(judged)
    refine = [
        make_turn(
            QUESTIONS[k],
            agent=0,
            round=1,
            seed=2000 + k,
            previous=answers[3 * k].text,
            peers=[
                PeerAnswer(
                    answers[3 * k + j].text,
                    answers[3 * k + j].decision,
                    confidences[3 * k + j].value,
                )
                for j in (1, 2)
            ],
        )
        for k in range(2)
    ]
    return answers, confidences, agent.refine(refine)


def test_model_id_names_the_default_gguf_and_its_bytes(smollm2):
    digest = hashlib.sha256(default_model_path().read_bytes()).hexdigest()
    # the fixture's context of 1,024 tokens is not the default's: its id says so (it cuts other texts)
    assert smollm2.model_id == f"llamacpp:SmolLM2-135M-Instruct-Q4_1-ctx1024@sha256:{digest[:32]}"


def test_decoding_and_prompts_use_every_cpu_unless_told(smollm2):
    cpus = usable_cpus()
    assert (smollm2._llm.n_threads, smollm2._llm.n_threads_batch) == (cpus, cpus)
    one = LlamaCppBackend(n_ctx=256, n_threads=1)
    assert (one._llm.n_threads, one._llm.n_threads_batch) == (1, 1)


def test_real_team_round_is_reproducible_and_cached(smollm2, tmp_path):
    counted = Counting(smollm2)
    agent = LLMAgent(CachedBackend(counted, tmp_path / "c.sqlite"), max_tokens=MAX_TOKENS)
    answers, confidences, refined = run_round(agent)

    for answer in answers + refined:
        assert answer.text.strip()
        assert answer.decision is None or answer.decision.lstrip("-").replace(".", "").isdigit()
        assert 0 < answer.completion_tokens <= MAX_TOKENS and answer.prompt_tokens > 20
    assert any(a.decision is not None for a in answers)
    for confidence in confidences:
        assert 0.0 <= confidence.value <= 1.0 and confidence.method == "logprob"
    assert all(c.prompt_tokens > 0 for a, c in zip(answers, confidences) if a.decision is not None)
    assert len({a.text for a in answers}) > 1  # sampling, different seeds: not all the same text

    # The same seeds give the same texts in a fresh, uncached run (in another order, too).
    fresh = LLMAgent(smollm2, max_tokens=MAX_TOKENS)
    again, again_confidences, again_refined = run_round(fresh)
    assert [a.text for a in again] == [a.text for a in answers]
    assert [a.text for a in again_refined] == [a.text for a in refined]
    assert [c.value for c in again_confidences] == pytest.approx(
        [c.value for c in confidences], abs=1e-6
    )
    reversed_batch = fresh.solve(list(reversed(solve_turns())))
    assert [a.text for a in reversed(reversed_batch)] == [a.text for a in answers]

    # The second cached run is served entirely from the cache.
    before = counted.requests
    cached = LLMAgent(CachedBackend(counted, tmp_path / "c.sqlite"), max_tokens=MAX_TOKENS)
    assert run_round(cached) == (answers, confidences, refined)
    assert counted.requests == before and cached.backend.misses == 0


def test_missing_gguf_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        LlamaCppBackend(tmp_path / "nope.gguf")


def test_sampling_follows_the_request_top_k_then_top_p_after_the_temperature(smollm2):
    """top_k=1 at a high temperature is greedy decoding; a wider top-k at temperature 2
    samples other texts; the mask llama.cpp draws from is the request's support."""
    from agents.base import GenerationRequest
    from agents.llamacpp_backend import _SupportMask
    from agents.sampling import sampling_support

    chat = ({"role": "user", "content": "Name three fruits."},)
    greedy = smollm2.generate([GenerationRequest(chat, max_tokens=12, temperature=0.0)])[0].text
    top1 = smollm2.generate([GenerationRequest(chat, max_tokens=12, temperature=2.0, top_k=1, seed=s) for s in range(3)])
    assert [g.text for g in top1] == [greedy] * 3
    hot = smollm2.generate([GenerationRequest(chat, max_tokens=12, temperature=2.0, top_k=40, seed=s) for s in range(3)])
    assert any(g.text != greedy for g in hot)
    logits = np.random.default_rng(0).normal(size=500).astype(np.float32)
    request = GenerationRequest(chat, temperature=0.5, top_p=0.9, top_k=30)
    masked = _SupportMask(request)(np.array([], dtype=np.intc), logits)
    support = sampling_support(logits, 0.5, 30, 0.9)
    assert np.array_equal(masked[support], logits[support]) and np.isneginf(masked[~support]).all()
