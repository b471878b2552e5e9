"""The protocol of a text collaboration: what a user implements to add one (about a page).

A *protocol* says how a team of LLM agents collaborates on a problem in the text-action
env (:mod:`deliberation_env.text.env`): the roles, the prompt of each role at each turn,
how the agents' texts combine into the team's output, the joint reward and its named
parts, the external feedback each agent reads at the next turn, and the *neutral text*
of a role (what stands in for an agent's text when its leave-one-out contribution is
computed). Everything is a function of the problem and the list of the agents' texts,
so a protocol holds no episode state and the env can score a team as often as it needs.
A protocol may also score many teams in one call (:class:`BatchScoring`, optional): the
env then hands it every team of a turn at once.
A protocol may also say what stands in for a completion cut at the token budget
(:class:`CutCompletions`, optional; the math protocol under strict scoring: its neutral
text, so a cut completion is no answer): the env only sees text, so it passes that text
on in its infos (``text_if_cut``) to whoever knows the finish reason
(:func:`agents.text_policy.played_text`).

The env never trusts a protocol's output blindly: a reward outside
:attr:`TextProtocol.reward_range`, a non-finite part or feedback of the wrong length is
an error naming the protocol. Text an agent wrote reaches a prompt only through
:func:`quote` (the env quotes ``previous`` and ``feedback`` before handing them to
:meth:`TextProtocol.prompt`), so a prompt never holds a NUL byte, a lone surrogate or a
megabyte of text.
"""

from __future__ import annotations

import functools
import math
import numbers
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.base import Message
from deliberation_env.tasks import Problem

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
"""What :func:`sanitize` puts in place of a character outside :func:`prompt_charset`."""
QUOTE_CHARS = 2_000
"""Most characters of agent-written text (own previous text, feedback) in one prompt slot."""
TRUNCATION_MARK = " [...truncated]"
"""Ends a quoted text that :func:`quote` had to cut."""

_SURROGATES = range(0xD800, 0xE000)
_ALLOWED_CONTROLS = frozenset("\t\n")


@functools.cache
def prompt_charset() -> frozenset[str]:
    """The characters a prompt may hold: the Unicode Basic Multilingual Plane without
    surrogates and without control characters other than tab and newline (63,425
    characters). Built once per process."""
    return frozenset(
        ch
        for ch in map(chr, range(0x10000))
        if ord(ch) not in _SURROGATES and (unicodedata.category(ch) != "Cc" or ch in _ALLOWED_CONTROLS)
    )


def sanitize(text: str) -> str:
    """``text`` with every character outside :func:`prompt_charset` replaced by U+FFFD.

    The length is kept (one character for one), so a bound on lengths holds after it.

    >>> sanitize("a\\x00b\\ud800c\\U0001F600")
    'a\\ufffdb\\ufffdc\\ufffd'
    """
    charset = prompt_charset()
    if all(ch in charset for ch in text):
        return text
    return "".join(ch if ch in charset else REPLACEMENT for ch in text)


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """Agent-written ``text`` made safe for a prompt: sanitized, and cut to at most
    ``limit`` characters, ending with :data:`TRUNCATION_MARK` when cut.

    >>> quote("x" * 50, limit=20)
    'xxxxx [...truncated]'
    """
    if len(text) > limit:
        text = text[: max(0, limit - len(TRUNCATION_MARK))] + TRUNCATION_MARK
    return sanitize(text[:limit])


def chat(system: str, user: str) -> tuple[Message, ...]:
    """A two-message chat: one system message, one user message."""
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def render(messages: Sequence[Message]) -> str:
    """Chat messages as one text (the env's observation): ``role: content`` blocks.

    >>> render(chat("Be brief.", "What is 1 + 1?"))
    'system: Be brief.\\n\\nuser: What is 1 + 1?'
    """
    return "\n\n".join(f"{message['role']}: {message['content']}" for message in messages)


@dataclass(frozen=True)
class Outcome:
    """What a protocol makes of one turn of the team's texts.

    Attributes:
        reward: The joint reward R of the team (before the env's ``reward_scale``).
        parts: The named parts R is computed from (each documented by the protocol).
        feedback: One text per agent: the external feedback its next prompt carries
            (math: the peers' answers; writing: the partner's text and the scores).
        output: The team's output, as text (math: the voted decision, ``None`` when no
            agent gave one; writing: the combined text).
    """

    reward: float
    parts: Mapping[str, float]
    feedback: tuple[str, ...]
    output: str | None


@runtime_checkable
class TextProtocol(Protocol):
    """How a team collaborates on a problem (see the module docstring).

    Attributes:
        name: A short name, e.g. ``"math"`` (named in errors and infos).
        reward_range: ``(low, high)``: every joint reward lies in it.
    """

    name: str
    reward_range: tuple[float, float]

    def roles(self, n_agents: int) -> tuple[str, ...]:
        """One role name per agent; ``ValueError`` if the protocol cannot seat ``n_agents``."""
        ...

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split`` (``"train"`` or ``"test"``), in a fixed order."""
        ...

    def prompt(
        self, problem: Problem, roles: tuple[str, ...], agent: int, previous: str | None, feedback: str | None
    ) -> tuple[Message, ...]:
        """The chat of ``agent`` for its next turn.

        Args:
            problem: The episode's problem.
            roles: Every agent's role (``roles[agent]`` is this agent's).
            agent: The agent's index.
            previous: The agent's own text of the last turn, quoted; ``None`` at turn 0.
            feedback: Its feedback from the last turn's :class:`Outcome`, quoted;
                ``None`` at turn 0.
        """
        ...

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """The joint reward, its parts, the feedback and the output of one text per agent.
        Any text is data: unparseable or hostile text scores low, it never raises."""
        ...

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """What replaces ``agent``'s text for its leave-one-out contribution."""
        ...


@runtime_checkable
class BatchScoring(Protocol):
    """What a protocol may add to score many teams at once (optional).

    The env scores every team of a turn, across the envs of a vector env and with each
    agent's text left out, in one call: a protocol with :meth:`score_many` gets them all
    (the coding protocol sends every program to the sandbox in one concurrent batch); any
    other protocol is asked :meth:`TextProtocol.score` once per team (:func:`score_many`).
    """

    def score_many(self, teams: Sequence[tuple[Problem, Sequence[str]]]) -> list[Outcome]:
        """One :class:`Outcome` per ``(problem, texts)`` of ``teams``, in order, each equal
        to what :meth:`TextProtocol.score` gives for it."""
        ...


@runtime_checkable
class CutCompletions(Protocol):
    """What a protocol may add to score a completion cut at the token budget (optional)."""

    def text_if_cut(self, problem: Problem, agent: int) -> str | None:
        """What ``agent`` plays in place of a completion cut at the token budget, or
        ``None``: the cut completion is played as it is."""
        ...


@runtime_checkable
class LeftOutText(Protocol):
    """What a protocol may add to say what replaces a text it knows (optional)."""

    def left_out_text(self, problem: Problem, agent: int, text: str) -> str:
        """What replaces ``agent``'s ``text`` for its leave-one-out and Shapley credit; it may
        depend on the text left out (the coding protocol withholds that helper's results)."""
        ...


def left_out_text(protocol: TextProtocol, problem: Problem, agent: int, text: str) -> str:
    """The protocol's :meth:`LeftOutText.left_out_text` when it has one, else its
    :meth:`TextProtocol.neutral_text`."""
    own = getattr(protocol, "left_out_text", None)  # not isinstance: a Protocol's check costs ~50 us a call
    return own(problem, agent, text) if own is not None else protocol.neutral_text(problem, agent)


def text_if_cut(protocol: TextProtocol, problem: Problem, agent: int) -> str | None:
    """The protocol's :meth:`CutCompletions.text_if_cut` when it has one, else ``None``
    (cut completions are played as they are)."""
    own = getattr(protocol, "text_if_cut", None)  # as CutCompletions checks, at a fraction of its cost
    return own(problem, agent) if own is not None else None


def score_many(protocol: TextProtocol, teams: Sequence[tuple[Problem, Sequence[str]]]) -> list[Outcome]:
    """The outcomes of ``teams``: the protocol's own :meth:`BatchScoring.score_many` when
    it has one, else one :meth:`TextProtocol.score` per team."""
    if getattr(protocol, "score_many", None) is not None:  # BatchScoring, checked as cheaply
        return list(protocol.score_many(teams))
    return [protocol.score(problem, texts) for problem, texts in teams]


def check_outcome(protocol: TextProtocol, outcome: Outcome, n_agents: int) -> Outcome:
    """``outcome`` if it is well formed, else a ``ValueError`` naming the protocol.

    Well formed: an :class:`Outcome` whose reward is a finite real number inside
    ``protocol.reward_range``, whose parts are finite real numbers keyed by strings and
    whose feedback is one string per agent.
    """
    where = f"protocol {protocol.name!r}"
    if not isinstance(outcome, Outcome):
        raise TypeError(f"{where}: score() must return an Outcome, got {type(outcome).__name__}")
    low, high = protocol.reward_range
    if not _finite(outcome.reward) or not low <= outcome.reward <= high:
        raise ValueError(f"{where}: joint reward {outcome.reward!r} is not a finite number in [{low}, {high}]")
    bad = {name: value for name, value in outcome.parts.items() if not (isinstance(name, str) and _finite(value))}
    if bad:
        raise ValueError(f"{where}: reward parts must be finite numbers keyed by name, got {bad!r}")
    reserved = {"joint", "contribution", "shapley"} & set(outcome.parts)
    if reserved:
        raise ValueError(f"{where}: reward parts may not be named {sorted(reserved)} (the env's own keys)")
    if len(outcome.feedback) != n_agents or not all(isinstance(text, str) for text in outcome.feedback):
        raise ValueError(f"{where}: feedback must be {n_agents} strings (one per agent), got {outcome.feedback!r}")
    return outcome


def _finite(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
