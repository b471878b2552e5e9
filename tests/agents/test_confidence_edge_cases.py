"""Degenerate critic scores give a defined, finite confidence (never NaN)."""

from __future__ import annotations

import math

import pytest
from agent_fakes import FakeBackend, make_turn

from agents import LLMAgent
from agents.base import LogprobResult
from agents.llm_agent import LOGPROB_DEFAULT, yes_probability

INF = math.inf


@pytest.mark.parametrize(
    "logprobs,expected",
    [
        ((-INF, -INF), LOGPROB_DEFAULT),  # both probability 0: no information
        ((None, -INF), LOGPROB_DEFAULT),  # unscored counts as probability 0, too
        ((-INF, None), LOGPROB_DEFAULT),
        ((-INF, -1.0), 0.0),
        ((-1.0, -INF), 1.0),
        ((-1000.0, -1001.0), 1 / (1 + math.exp(-1.0))),  # stable far from 0
        ((None, None), None),  # nothing scored: the caller falls back to verbalized
    ],
)
def test_yes_probability_on_degenerate_scores(logprobs, expected):
    value = yes_probability(LogprobResult(logprobs, prompt_tokens=1))
    assert value == (None if expected is None else pytest.approx(expected))


def test_critic_with_both_probabilities_zero_gives_half():
    backend = FakeBackend(logprobs=(-INF, -INF))
    (confidence,) = LLMAgent(backend).introspect([make_turn(previous="The answer is 7.")])
    assert confidence.value == LOGPROB_DEFAULT == 0.5 and confidence.method == "logprob"
    assert [name for name, _ in backend.calls] == ["logprobs"]  # scored: no verbalized call
