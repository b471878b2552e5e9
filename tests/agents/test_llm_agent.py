"""LLMAgent on a scripted backend: one backend call per phase, seeds, parsing, confidence."""

from __future__ import annotations

import pytest
from agent_fakes import FakeBackend, make_turn

from agents import LLMAgent, prompts
from agents.base import Generation, PeerAnswer, Solver
from agents.llm_agent import parse_verbalized
from agents.seeding import derive_seed
from deliberation_env.tasks.numeric import NUMERIC_INSTRUCTIONS


def test_is_a_solver_with_the_backends_model_id():
    agent = LLMAgent(FakeBackend())
    assert isinstance(agent, Solver)
    assert agent.model_id == "fake:model"


def test_solve_makes_one_call_for_all_agents_and_envs():
    backend = FakeBackend()
    agent = LLMAgent(backend, max_tokens=50, temperature=0.3, top_p=0.9, top_k=20)
    turns = [
        make_turn(f"What is {env} + 1?", agent=a, seed=100 * env + a)
        for env in range(4)
        for a in range(3)
    ]
    answers = agent.solve(turns)
    assert [name for name, _ in backend.calls] == ["generate"]
    requests = backend.calls[0][1]
    assert len(requests) == len(answers) == 12
    for t, request, answer in zip(turns, requests, answers):
        assert request.messages == prompts.solve_messages(t)
        assert request.messages[-1]["content"].endswith(NUMERIC_INSTRUCTIONS)
        assert (request.max_tokens, request.temperature, request.top_p, request.top_k) == (50, 0.3, 0.9, 20)
        assert request.seed == derive_seed(t.seed, request.messages)
        assert answer.decision == str(request.seed % 10)
        assert answer.completion_tokens == 7
    assert [a.prompt_tokens for a in answers] == [10 + k for k in range(12)]
    assert len({r.seed for r in requests}) == 12


def test_same_history_same_seed():
    backend = FakeBackend()
    agent = LLMAgent(backend)
    agent.solve([make_turn(seed=5), make_turn(seed=5), make_turn(seed=6)])
    seeds = [r.seed for r in backend.calls[0][1]]
    assert seeds[0] == seeds[1] != seeds[2]


def test_unparseable_text_is_data():
    class Mumbler:
        model_id, supports_logprobs = "mumbler", False

        def generate(self, requests):
            return [Generation("I do not know.", 5, 4, "stop") for _ in requests]

    answers = LLMAgent(Mumbler()).solve([make_turn()])
    assert answers[0].decision is None and answers[0].text == "I do not know."
    assert len(answers[0].profile) == 6


def test_refine_prompt_holds_own_solution_and_peers():
    backend = FakeBackend()
    peers = (PeerAnswer("... 12", "12", 0.8), PeerAnswer("???", None, 0.1))
    t = make_turn(round=1, previous="3 + 4 = 8. The answer is 8.", peers=peers)
    LLMAgent(backend).refine([t, t])
    assert [name for name, _ in backend.calls] == ["generate"]
    content = backend.calls[0][1][0].messages[-1]["content"]
    assert "The answer is 8." in content
    assert "Agent 1: 12 (confidence 0.80)" in content
    assert f"Agent 2: {prompts.NO_ANSWER} (confidence 0.10)" in content
    assert content.endswith(NUMERIC_INSTRUCTIONS)


def test_refine_without_previous_is_a_clear_error():
    with pytest.raises(ValueError, match="needs turn.previous"):
        LLMAgent(FakeBackend()).refine([make_turn()])


def test_logprob_introspection_one_call_and_none_short_circuit():
    backend = FakeBackend()
    turns = [
        make_turn(previous="The answer is 7."),
        make_turn(previous="no idea"),
        make_turn(previous="It is 9", agent=1),
    ]
    confidences = LLMAgent(backend).introspect(turns)
    assert [name for name, _ in backend.calls] == ["logprobs"]
    requests = backend.calls[0][1]
    assert len(requests) == 2  # the unparseable answer needs no call
    assert requests[0].candidates == ("Yes", "No")
    assert "Is this answer correct? Answer Yes or No." in requests[0].messages[-1]["content"]
    assert [c.value for c in confidences] == pytest.approx([0.75, 0.0, 0.75])
    assert {c.method for c in confidences} == {"logprob"}
    assert [c.prompt_tokens for c in confidences] == [20, 0, 20]


def test_unscored_critic_falls_back_to_verbalized():
    backend = FakeBackend(logprobs=(None, None))
    confidences = LLMAgent(backend).introspect(
        [make_turn(previous="The answer is 7."), make_turn(previous="x")]
    )
    assert [name for name, _ in backend.calls] == ["logprobs", "generate"]
    (verbal,) = backend.calls[1][1]
    assert "0 to 100" in verbal.messages[-1]["content"] and verbal.temperature == 0.0
    assert confidences[0].method == "verbalized"
    assert confidences[0].value == pytest.approx(
        parse_verbalized(f"The answer is {verbal.seed % 10}.")
    )
    assert (confidences[0].prompt_tokens, confidences[0].completion_tokens) == (10, 7)


def test_backend_without_logprobs_uses_verbalized():
    backend = FakeBackend(supports_logprobs=False)
    agent = LLMAgent(backend)
    assert agent.confidence == "verbalized"
    (confidence,) = agent.introspect([make_turn(previous="The answer is 7.")])
    assert [name for name, _ in backend.calls] == ["generate"]
    assert confidence.method == "verbalized" and 0.0 <= confidence.value <= 1.0
    with pytest.raises(ValueError, match="no log-probabilities"):
        LLMAgent(backend, confidence="logprob")
    with pytest.raises(ValueError, match="confidence must be one of"):
        LLMAgent(backend, confidence="vibes")
    with pytest.raises(ValueError, match="top_k must be >= 0"):
        LLMAgent(backend, top_k=-1)


def test_parse_verbalized():
    assert parse_verbalized("Confidence: 30") == 0.3
    assert parse_verbalized("100%!") == 1.0
    assert parse_verbalized("no number") == 0.5


def test_empty_batches_make_no_call():
    backend = FakeBackend()
    agent = LLMAgent(backend)
    assert agent.solve([]) == [] and agent.refine([]) == [] and agent.introspect([]) == []
    assert backend.calls == []
