"""The prompt templates of an LLM agent, all in one place.

Every prompt is a short chat: one system message and one user message. The user
message ends with the task's answer-format instruction (``Turn.instructions``), so the
task, not the agent, decides how an answer must be written. Prompts are kept short on
purpose: the default model (SmolLM2-135M-Instruct) is tiny and runs on a CPU.

=============  =====================================================================
phase          user message
=============  =====================================================================
solve          the question, then the instruction
refine         the question, one's own previous solution, the peers' answers with
               their confidences, a request to reconsider, then the instruction
introspect     the question, the answer under judgement, then the critic question
               ``"Is this answer correct? Answer Yes or No."`` (scored by the
               log-probabilities of the first reply token, ``"Yes"`` against ``"No"``)
verbalized     as introspect, but asking for a confidence from 0 to 100 (the fallback
               for backends without log-probabilities)
=============  =====================================================================
"""

from __future__ import annotations

from agents.base import Answer, Message, PeerAnswer, Turn

SYSTEM = "You are a careful problem solver."
"""The system message of every prompt."""

SOLVE = "{question}\n\n{instructions}"

REFINE = (
    "{question}\n\n"
    "Your previous solution:\n{previous}\n\n"
    "Answers of other agents (confidence 0-1):\n{peers}\n\n"
    "Check your solution against theirs and solve the problem again. {instructions}"
)

INTROSPECT = (
    "{question}\n\nProposed solution:\n{answer}\n\nIs this answer correct? Answer Yes or No."
)

VERBALIZED = (
    "{question}\n\nProposed solution:\n{answer}\n\n"
    "How likely is this answer to be correct? Reply with one number from 0 to 100."
)

CRITIC_CANDIDATES = ("Yes", "No")
"""The critic's two replies: P(Yes) / (P(Yes) + P(No)) is the confidence."""

NO_ANSWER = "no answer"
"""How a peer without a parseable decision is shown."""


def _chat(user: str) -> tuple[Message, ...]:
    return ({"role": "system", "content": SYSTEM}, {"role": "user", "content": user})


def _peer_line(position: int, peer: PeerAnswer) -> str:
    answer = NO_ANSWER if peer.decision is None else peer.decision
    return f"- Agent {position}: {answer} (confidence {peer.confidence:.2f})"


def previous_answer(turn: Turn) -> Answer:
    """``turn.previous``, which refine and introspect need; a clear error if it is missing."""
    if turn.previous is None:
        raise ValueError(f"agent {turn.agent} round {turn.round}: this phase needs turn.previous")
    return turn.previous


def _previous_text(turn: Turn) -> str:
    return previous_answer(turn).text.strip()


def solve_messages(turn: Turn) -> tuple[Message, ...]:
    """The round-0 prompt: answer the question independently."""
    return _chat(SOLVE.format(question=turn.question, instructions=turn.instructions))


def refine_messages(turn: Turn) -> tuple[Message, ...]:
    """The refine prompt: one's previous solution and the peers' answers and confidences.

    Peers are numbered 1, 2, ... in the turn's relative order (i+1, i+2, ...), so an
    agent never learns its absolute index from the prompt.
    """
    peers = "\n".join(_peer_line(k, peer) for k, peer in enumerate(turn.peers, start=1))
    user = REFINE.format(
        question=turn.question,
        previous=_previous_text(turn),
        peers=peers or NO_ANSWER,
        instructions=turn.instructions,
    )
    return _chat(user)


def introspect_messages(turn: Turn) -> tuple[Message, ...]:
    """The critic prompt for ``turn.previous``, answered by ``"Yes"`` or ``"No"``."""
    return _chat(INTROSPECT.format(question=turn.question, answer=_previous_text(turn)))


def verbalized_messages(turn: Turn) -> tuple[Message, ...]:
    """The verbalized-confidence prompt for ``turn.previous`` (a number from 0 to 100)."""
    return _chat(VERBALIZED.format(question=turn.question, answer=_previous_text(turn)))
