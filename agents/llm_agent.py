"""An LLM team member: a :class:`~agents.base.Solver` built on any text backend.

Each phase (solve, refine, introspect) turns its whole batch of turns (any agents, any
envs) into requests and makes ONE backend call, so batching backends see every request
of a round at once. Every request's seed is derived from the turn's seed and the prompt
itself (:func:`agents.seeding.derive_seed`), so the same history gives the same output.

Introspective confidence (``confidence=``):

- ``"logprob"``: the critic prompt of :mod:`agents.prompts` is scored by the backend's
  next-token log-probabilities: ``P(Yes) / (P(Yes) + P(No))``. A candidate the backend
  could not score (``None``, e.g. outside a server's top log-probs) counts as
  probability 0; if neither could be scored, that turn falls back to ``"verbalized"``
  in one extra call for all such turns. If both have probability 0 (log-prob ``-inf``,
  or one ``-inf`` and one unscored) the confidence is 0.5: no information.
- ``"verbalized"``: the model is asked for a number from 0 to 100 (greedy, a few
  tokens); the first number in the reply, clipped to [0, 100], divided by 100. A reply
  without a number gives 0.5 (no information).
- ``"auto"`` (default): ``"logprob"`` if ``backend.supports_logprobs``, else ``"verbalized"``.

An answer without a parseable decision cannot be correct: its confidence is 0.0 with no
backend call (method as configured, zero tokens).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from agents import progress, prompts
from agents.base import (
    Answer,
    Backend,
    Confidence,
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    Message,
    Turn,
)
from agents.profile import reasoning_profile
from agents.sampling import AGENT_TEMPERATURE
from agents.seeding import derive_seed

CONFIDENCE_METHODS = ("auto", "logprob", "verbalized")
VERBALIZED_MAX_TOKENS = 8
"""Tokens allowed for a verbalized confidence reply (a number from 0 to 100)."""
VERBALIZED_DEFAULT = 0.5
"""Confidence given when a verbalized reply holds no number."""
LOGPROB_DEFAULT = 0.5
"""Confidence given when the critic gives both Yes and No probability 0 (no information)."""

_FIRST_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse_verbalized(text: str) -> float:
    """A verbalized confidence ("85", "85%", "I'd say 85") as a probability.

    >>> parse_verbalized("85%"), parse_verbalized("I am 250 percent sure"), parse_verbalized("yes")
    (0.85, 1.0, 0.5)
    """
    match = _FIRST_NUMBER.search(text)
    if match is None:
        return VERBALIZED_DEFAULT
    return min(100.0, float(match.group())) / 100.0


def yes_probability(result: LogprobResult) -> float | None:
    """``P(Yes) / (P(Yes) + P(No))`` from a critic's scores, ``None`` if neither was scored.

    A candidate the backend could not score counts as probability 0 (log-prob ``-inf``).
    If both have probability 0 the critic says nothing: ``LOGPROB_DEFAULT`` (0.5).

    >>> round(yes_probability(LogprobResult((math.log(0.6), math.log(0.2)), prompt_tokens=9)), 6)
    0.75
    >>> yes_probability(LogprobResult((None, -1.0), prompt_tokens=9))
    0.0
    >>> yes_probability(LogprobResult((-math.inf, None), prompt_tokens=9))
    0.5
    """
    if all(logprob is None for logprob in result.logprobs):
        return None
    yes, no = (-math.inf if logprob is None else logprob for logprob in result.logprobs)
    if yes == no == -math.inf:
        return LOGPROB_DEFAULT
    top = max(yes, no)  # subtract the max: stable for very negative log-probs
    p_yes, p_no = math.exp(yes - top), math.exp(no - top)
    return p_yes / (p_yes + p_no)


class LLMAgent:
    """A team member that solves, refines and judges answers with a text backend.

    Args:
        backend: Any :class:`~agents.base.Backend` (wrap it in
            :class:`agents.CachedBackend` to cache its generations).
        max_tokens: Most tokens per solution (solve and refine).
        temperature: Sampling temperature of solutions (0 is greedy).
        top_p: Nucleus sampling mass of solutions.
        top_k: Solutions sample among the ``top_k`` most likely tokens only (0: all).
        confidence: ``"auto"``, ``"logprob"`` or ``"verbalized"`` (module docstring).

    Raises:
        ValueError: On an unknown ``confidence`` or ``"logprob"`` with a backend
            that has no log-probabilities.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        max_tokens: int = 256,
        temperature: float = AGENT_TEMPERATURE,
        top_p: float = 0.95,
        top_k: int = 0,
        confidence: str = "auto",
    ) -> None:
        if confidence not in CONFIDENCE_METHODS:
            raise ValueError(f"confidence must be one of {CONFIDENCE_METHODS}, got {confidence!r}")
        if confidence == "logprob" and not backend.supports_logprobs:
            raise ValueError(
                f"backend {backend.model_id} has no log-probabilities; "
                "use confidence='verbalized' or 'auto'"
            )
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: the whole vocabulary), got {top_k}")
        self.backend = backend
        self.model_id = backend.model_id
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        use_logprobs = confidence == "logprob" or (
            confidence == "auto" and backend.supports_logprobs
        )
        self.confidence = "logprob" if use_logprobs else "verbalized"

    # ------------------------------------------------------------------ solutions
    def solve(self, turns: Sequence[Turn]) -> list[Answer]:
        """Round 0: each question answered independently, in one backend call."""
        return self._answers(turns, [prompts.solve_messages(turn) for turn in turns], "solve")

    def refine(self, turns: Sequence[Turn]) -> list[Answer]:
        """Re-solve given one's previous solution and the peers' answers, in one call."""
        return self._answers(turns, [prompts.refine_messages(turn) for turn in turns], "refine")

    def _answers(self, turns: Sequence[Turn], chats: list[tuple[Message, ...]], phase: str) -> list[Answer]:
        if not turns:
            return []
        requests = [
            self._request(chat, turn.seed, self.max_tokens, self.temperature, self.top_p, self.top_k)
            for turn, chat in zip(turns, chats, strict=True)
        ]
        with progress.call(len(requests), phase):
            generations = self.backend.generate(requests)
        return [
            _answer(turn, generation) for turn, generation in zip(turns, generations, strict=True)
        ]

    # --------------------------------------------------------------- introspection
    def introspect(self, turns: Sequence[Turn]) -> list[Confidence]:
        """Judge each ``turn.previous``: the probability that it is correct.

        One backend call for all turns with a decision (plus, with log-probs, one
        verbalized call for turns the backend could not score at all).
        """
        results: list[Confidence | None] = [
            Confidence(0.0, self.confidence)
            if prompts.previous_answer(turn).decision is None
            else None
            for turn in turns
        ]
        pending = [k for k, result in enumerate(results) if result is None]
        if self.confidence == "logprob" and pending:
            pending = self._logprob_confidences(turns, pending, results)
        if pending:
            self._verbalized_confidences(turns, pending, results)
        return results  # type: ignore[return-value]  # every slot is filled above

    def _logprob_confidences(
        self, turns: Sequence[Turn], indices: list[int], results: list[Confidence | None]
    ) -> list[int]:
        """Fill ``results`` from the critic's log-probs; return the turns left unscored."""
        requests = [
            LogprobRequest(prompts.introspect_messages(turns[k]), prompts.CRITIC_CANDIDATES)
            for k in indices
        ]
        unscored = []
        with progress.call(len(requests), "confidence"):
            scores = self.backend.next_token_logprobs(requests)
        for k, scored in zip(indices, scores, strict=True):
            value = yes_probability(scored)
            if value is None:
                unscored.append(k)
            else:
                results[k] = Confidence(value, "logprob", prompt_tokens=scored.prompt_tokens)
        return unscored

    def _verbalized_confidences(
        self, turns: Sequence[Turn], indices: list[int], results: list[Confidence | None]
    ) -> None:
        requests = [
            self._request(
                prompts.verbalized_messages(turns[k]),
                turns[k].seed,
                VERBALIZED_MAX_TOKENS,
                0.0,
                1.0,
            )
            for k in indices
        ]
        with progress.call(len(requests), "confidence"):
            generations = self.backend.generate(requests)
        for k, generation in zip(indices, generations, strict=True):
            results[k] = Confidence(
                parse_verbalized(generation.text),
                "verbalized",
                prompt_tokens=generation.prompt_tokens,
                completion_tokens=generation.completion_tokens,
            )

    # -------------------------------------------------------------------- helpers
    @staticmethod
    def _request(
        chat: tuple[Message, ...], seed: int, max_tokens: int, temperature: float, top_p: float, top_k: int = 0
    ) -> GenerationRequest:
        return GenerationRequest(
            messages=chat,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            seed=derive_seed(seed, chat),
        )

    def __repr__(self) -> str:
        return f"LLMAgent({self.model_id}, max_tokens={self.max_tokens}, confidence={self.confidence!r})"


def _answer(turn: Turn, generation: Generation) -> Answer:
    decision = turn.parse(generation.text)
    return Answer(
        text=generation.text,
        decision=decision,
        profile=reasoning_profile(generation.text, decision),
        prompt_tokens=generation.prompt_tokens,
        completion_tokens=generation.completion_tokens,
        finish_reason=generation.finish_reason,
    )
