"""Test doubles of the agents tests: a scripted fake backend and numeric turns."""

from __future__ import annotations

import math
from collections.abc import Sequence

from agents.base import Answer, Generation, GenerationRequest, LogprobRequest, LogprobResult, Turn
from agents.profile import reasoning_profile
from deliberation_env.tasks.numeric import NUMERIC_INSTRUCTIONS, extract_number

SCRIPTED_LOGPROBS = (math.log(0.6), math.log(0.2))  # P(Yes) / (P(Yes) + P(No)) = 0.75


class FakeBackend:
    """Answers every generation with ``"The answer is <seed % 10>."`` and every critic
    with fixed log-probs; records each call as ``(method, requests)``."""

    def __init__(self, *, supports_logprobs: bool = True, logprobs=SCRIPTED_LOGPROBS):
        self.model_id = "fake:model"
        self.supports_logprobs = supports_logprobs
        self.logprobs = logprobs
        self.calls: list[tuple[str, list]] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.calls.append(("generate", list(requests)))
        return [
            Generation(
                f"Some steps.\nThe answer is {r.seed % 10}.",
                prompt_tokens=10 + k,
                completion_tokens=7,
                finish_reason="stop",
            )
            for k, r in enumerate(requests)
        ]

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        self.calls.append(("logprobs", list(requests)))
        return [LogprobResult(self.logprobs, prompt_tokens=20) for _ in requests]


def make_turn(
    question: str = "What is 3 + 4?",
    *,
    agent: int = 0,
    round: int = 0,
    seed: int = 0,
    previous: str | None = None,
    peers=(),
) -> Turn:
    """A numeric turn; ``previous`` is the text of the agent's current answer."""
    answer = None
    if previous is not None:
        decision = extract_number(previous)
        answer = Answer(previous, decision, reasoning_profile(previous, decision))
    return Turn(
        question,
        NUMERIC_INSTRUCTIONS,
        extract_number,
        agent,
        round,
        seed,
        answer,
        tuple(peers),
    )


class Counting:
    """A pass-through backend that counts the requests reaching the model."""

    def __init__(self, inner):
        self.inner, self.model_id, self.supports_logprobs = (
            inner,
            inner.model_id,
            inner.supports_logprobs,
        )
        self.requests = 0

    def generate(self, requests):
        self.requests += len(requests)
        return self.inner.generate(requests)

    def next_token_logprobs(self, requests):
        self.requests += len(requests)
        return self.inner.next_token_logprobs(requests)
