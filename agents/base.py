"""The two interfaces of this package: text backends and team members (solvers).

A *backend* turns chat messages into text (``generate``) and, where it can, scores the
next token (``next_token_logprobs``, used for introspective confidence). It knows nothing
about deliberation.

A *solver* is what the environment asks to take a turn: solve a problem, refine an answer
given the peers' answers, or judge an answer (introspection). :class:`agents.LLMAgent`
is a solver built on any backend; :class:`agents.SimulatedTeam` is a solver with no text
model behind it. The environment gathers every turn of a phase (all agents of all envs
that share a solver) into one call, so a solver always receives a batch.

Nothing here imports ``deliberation_env``: a turn carries what a solver needs (the
question, the task's answer-format instruction and its parser) as plain values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agents.sampling import AGENT_TEMPERATURE

Message = dict[str, str]
"""A chat message, ``{"role": "system" | "user" | "assistant", "content": str}``."""


# --------------------------------------------------------------------------- backends
@dataclass(frozen=True)
class GenerationRequest:
    """One chat completion to generate.

    Attributes:
        messages: The chat, oldest message first.
        max_tokens: Most new tokens to generate.
        temperature: Sampling temperature (0 is greedy).
        top_p: Nucleus sampling mass.
        seed: Sampling seed; the same request and seed give the same text.
        stop: Strings at which generation stops (not included in the text).
        top_k: Sample among the ``top_k`` most likely tokens only (0: the whole vocabulary).

    Every backend samples a token the same way (as ``transformers``' ``generate`` and vLLM
    do): divide the logits by the temperature, keep the ``top_k`` largest, and keep the
    smallest set of those whose probability under their own softmax reaches ``top_p``; the
    token is drawn from the softmax over that set. (:func:`sampling_support` computes the set.)
    """

    messages: tuple[Message, ...]
    max_tokens: int = 256
    temperature: float = AGENT_TEMPERATURE
    top_p: float = 0.95
    seed: int = 0
    stop: tuple[str, ...] = ()
    top_k: int = 0


@dataclass(frozen=True)
class Generation:
    """A generated completion with its token accounting.

    Attributes:
        text: The completion text.
        prompt_tokens: Tokens in the rendered prompt.
        completion_tokens: Tokens generated.
        finish_reason: ``"stop"`` (end of turn or a stop string) or ``"length"``.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


@dataclass(frozen=True)
class LogprobRequest:
    """Log-probabilities of candidate first tokens of the assistant's reply.

    Attributes:
        messages: The chat whose next (assistant) token is scored.
        candidates: Continuations to score, e.g. ``("Yes", "No")``; each is scored by
            the log-probability of its first token.
    """

    messages: tuple[Message, ...]
    candidates: tuple[str, ...]


@dataclass(frozen=True)
class LogprobResult:
    """Scores of one :class:`LogprobRequest`.

    Attributes:
        logprobs: One log-probability per candidate; ``None`` where the backend could not
            score it (e.g. not among a server's top log-probs).
        prompt_tokens: Tokens in the rendered prompt.
    """

    logprobs: tuple[float | None, ...]
    prompt_tokens: int


@runtime_checkable
class Backend(Protocol):
    """A batched text model. ``model_id`` names the model and its settings, stably:
    it keys the response cache and is written into every result file."""

    model_id: str
    supports_logprobs: bool

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, in order."""
        ...

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Score candidate next tokens per request, in order (only if ``supports_logprobs``)."""
        ...


class BackendError(RuntimeError):
    """A backend failed after its retries; the message names the backend and request."""


class ServerError(BackendError):
    """The inference server a backend talks to refused a request or failed every attempt
    at it (not running, unreachable, another model's name, a proxy's page, its own errors):
    the setup's fault, not the package's, so the command line says it in one line (the
    message names the backend, the server and what went wrong)."""


# ---------------------------------------------------------------------- solver turns
@dataclass(frozen=True, slots=True)
class Answer:
    """An agent's current answer.

    Attributes:
        text: The full reasoning text (for simulated solvers a short marker text).
        decision: The canonical decision parsed by the task, ``None`` if unparseable.
        profile: The reasoning profile z_prof, ``PROFILE_SIZE`` floats in [0, 1]
            (see :mod:`agents.profile`).
        prompt_tokens: Prompt tokens spent producing it.
        completion_tokens: Tokens generated producing it.
        finish_reason: ``"length"`` if the text was cut at the token budget, else
            ``"stop"`` (the env counts a cut answer as no answer under strict scoring).
    """

    text: str
    decision: str | None
    profile: tuple[float, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True, slots=True)
class PeerAnswer:
    """What a refining agent is shown of one peer: its answer and its confidence."""

    text: str
    decision: str | None
    confidence: float


@dataclass(frozen=True, slots=True)
class Turn:
    """One agent's turn in one environment, in one phase.

    Attributes:
        question: The problem statement.
        instructions: The task's answer-format instruction, appended to prompts.
        parse: The task's parser, text -> canonical decision or ``None``.
        agent: Agent index in the team.
        round: Deliberation round (0 for the initial solve).
        seed: Seed derived from (episode seed, problem, agent, round).
        previous: This agent's current answer (refine, introspect), else ``None``.
        peers: The peers' answers and confidences, in relative order i+1, i+2, ... (refine).
    """

    question: str
    instructions: str
    parse: Callable[[str], str | None]
    agent: int
    round: int
    seed: int
    previous: Answer | None = None
    peers: tuple[PeerAnswer, ...] = ()


@dataclass(frozen=True, slots=True)
class Confidence:
    """An introspective confidence.

    Attributes:
        value: Confidence that the answer is correct, in [0, 1].
        method: ``"logprob"`` (P(Yes)/(P(Yes)+P(No))), ``"verbalized"`` (the model states
            a number) or ``"simulated"``.
        prompt_tokens: Prompt tokens spent on the critic question.
        completion_tokens: Tokens generated for it.
    """

    value: float
    method: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class Solver(Protocol):
    """A team member, as the environment sees it. Every method takes a batch of turns
    (any agents, any envs) and returns one result per turn, in order."""

    model_id: str

    def solve(self, turns: Sequence[Turn]) -> list[Answer]:
        """Round 0: answer each question independently."""
        ...

    def refine(self, turns: Sequence[Turn]) -> list[Answer]:
        """Re-solve given one's previous answer and the peers' answers and confidences."""
        ...

    def introspect(self, turns: Sequence[Turn]) -> list[Confidence]:
        """Judge ``turn.previous``: the probability that it is correct."""
        ...


class PrivilegedSolver(ABC):
    """A team member that is handed the ground truth: the reference decision of every turn.

    The environment passes ``references`` (one reference decision per turn, in order) only
    to solvers that subclass this class; a plain :class:`Solver` never sees them. It is
    meant for solvers with no text model, such as :class:`agents.SimulatedTeam`, which must
    know what "correct" is to simulate being right or wrong.
    """

    model_id: str

    @abstractmethod
    def solve(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Round 0: answer each question independently."""

    @abstractmethod
    def refine(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Re-solve given one's previous answer and the peers' answers and confidences."""

    @abstractmethod
    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        """Judge ``turn.previous``: the probability that it is correct."""


def call_solver(
    solver: Solver | PrivilegedSolver, phase: str, turns: Sequence[Turn], references: Sequence[str]
) -> list[Any]:
    """Ask ``solver`` to play ``phase`` on ``turns``, handing it ``references`` only if it is privileged.

    The one place where ground truth is passed on: the environment and solver wrappers
    call solvers through it, so a plain :class:`Solver` never receives a reference.

    Args:
        solver: The solver to call.
        phase: ``"solve"``, ``"refine"`` or ``"introspect"``.
        turns: The turns of the batch.
        references: The reference decision of each turn's problem, in the order of ``turns``.

    Returns:
        The solver's results, one per turn.
    """
    method = getattr(solver, phase)
    if isinstance(solver, PrivilegedSolver):
        return method(turns, references)
    return method(turns)
