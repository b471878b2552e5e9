"""A protocol from plain functions: a custom task without writing a protocol class.

CoMLRL describes a task by its ``formatters`` (one prompt function per agent), a
``reward_func`` (the joint reward of the agents' completions) and an optional
``external_transition`` (the feedback of the next turn). :class:`FunctionProtocol` takes
the same three things and is a :class:`~deliberation_env.text.protocols.base.TextProtocol`,
so ``de.text_env(protocol=...)``, the learners' configs and the CLI accept it (the CLI by
import path, ``--protocol ./my_module.py:my_protocol``)::

    import deliberation_env as de
    from deliberation_env.text.protocols import FunctionProtocol

    task = de.tasks.get("jsonl", path="my_questions.jsonl")

    def prompt(problem, agent, previous, feedback):
        return f"{problem.question}\\nAnswer in one word."

    def reward(problem, texts):
        return sum(task.is_correct(problem, task.parse(problem, t)) for t in texts) / len(texts)

    protocol = FunctionProtocol(task, prompt=prompt, reward=reward, n_agents=2)
    env = de.text_env(protocol=protocol)

The env checks every reward against ``reward_range`` and every feedback for its length,
as for any protocol; the functions must treat any text as data (never raise on it).
"""

from __future__ import annotations

import numbers
import reprlib
import warnings
from collections.abc import Callable, Mapping, Sequence

from agents.base import Message
from deliberation_env.tasks import Problem, Task
from deliberation_env.tasks.base import SPLITS, check_split
from deliberation_env.text.protocols.base import Outcome, chat

PromptFunction = Callable[[Problem, int, "str | None", "str | None"], "str | Sequence[Message]"]
"""``prompt(problem, agent, previous, feedback)``: the user message (or the whole chat) of
``agent``'s next turn; ``previous`` and ``feedback`` are ``None`` at turn 0, else quoted."""
RewardFunction = Callable[[Problem, Sequence[str]], "float | Mapping[str, float]"]
"""``reward(problem, texts)``: the joint reward R of one text per agent, or its named parts
(R is then their sum)."""
FeedbackFunction = Callable[[Problem, Sequence[str]], Sequence[str]]
"""``feedback(problem, texts)``: one text per agent, read at its next turn."""

SYSTEM = "You are one of {n} agents working on a task together."
"""The system message of a prompt function that returns a user message only."""


class FunctionProtocol:
    """A :class:`~deliberation_env.text.protocols.base.TextProtocol` made of functions.

    Args:
        problems: Where the problems come from: a task (its ``problems(split)``, e.g.
            ``de.tasks.get("jsonl", path=...)``), or ``{"train": [...], "test": [...]}``
            of :class:`~deliberation_env.tasks.Problem`.
        prompt: :data:`PromptFunction`.
        reward: :data:`RewardFunction`.
        feedback: :data:`FeedbackFunction`; ``None``: no feedback (every agent reads ``""``).
        n_agents: The team size it seats (>= 1).
        reward_range: ``(low, high)`` of R; a reward outside it is an error.
        name: Named in errors, infos and result files.
        neutral: What replaces an agent's text for its leave-one-out contribution, and a
            completion cut at the token budget (a cut answer is no answer, as strict
            scoring holds: :meth:`text_if_cut`).
        play_cut: Play a cut completion as it is instead (the reward function then decides
            what a cut text earns).
    """

    def __init__(
        self,
        problems: Task | Mapping[str, Sequence[Problem]],
        *,
        prompt: PromptFunction,
        reward: RewardFunction,
        feedback: FeedbackFunction | None = None,
        n_agents: int = 2,
        reward_range: tuple[float, float] = (0.0, 1.0),
        name: str = "function",
        neutral: str = "",
        play_cut: bool = False,
    ) -> None:
        for what, function in (("prompt", prompt), ("reward", reward), ("feedback", feedback)):
            if not (callable(function) or (what == "feedback" and function is None)):
                raise TypeError(f"FunctionProtocol {what} must be a function, got {function!r}")
        if not (isinstance(n_agents, int) and n_agents >= 1):
            raise ValueError(f"FunctionProtocol n_agents must be an integer >= 1, got {n_agents!r}")
        low, high = reward_range
        if not low < high:
            raise ValueError(f"FunctionProtocol reward_range must be (low, high) with low < high, got {reward_range!r}")
        if isinstance(problems, Mapping):
            missing = [split for split in SPLITS if split not in problems]
            if missing:
                raise ValueError(f"FunctionProtocol problems need the splits {SPLITS}, missing {missing}")
            self._splits = {split: tuple(problems[split]) for split in SPLITS}
        else:
            self._splits = None
            self._task = problems
        self._prompt, self._reward, self._feedback = prompt, reward, feedback
        self.n_agents, self.reward_range, self.name, self.neutral = n_agents, (low, high), name, neutral
        self.play_cut = bool(play_cut)
        self._said_cut = False

    def __repr__(self) -> str:
        return f"FunctionProtocol({self.name!r}, n_agents={self.n_agents})"

    def roles(self, n_agents: int) -> tuple[str, ...]:
        """``("agent",) * n_agents`` when ``n_agents`` is the size this protocol seats."""
        if n_agents != self.n_agents:
            raise ValueError(
                f"protocol {self.name!r} seats n_agents={self.n_agents}, got {n_agents}: give the env "
                f"n_agents={self.n_agents} too (its default is 2)"
            )
        return ("agent",) * n_agents

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split``."""
        return self._task.problems(split) if self._splits is None else self._splits[check_split(split)]

    def prompt(
        self, problem: Problem, roles: tuple[str, ...], agent: int, previous: str | None, feedback: str | None
    ) -> tuple[Message, ...]:
        """The prompt function's chat, or its text after the system message :data:`SYSTEM`."""
        made = self._prompt(problem, agent, previous, feedback)
        if isinstance(made, str):
            return chat(SYSTEM.format(n=self.n_agents), made)
        if isinstance(made, Sequence) and made and all(isinstance(m, Mapping) for m in made):
            return tuple(made)
        raise TypeError(
            f"protocol {self.name!r}: the prompt function returned {_shown(made)}: return the user message "
            "(a str) or the whole chat (a list of {'role': ..., 'content': ...} messages)"
        )

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """R from the reward function (its parts summed, when it names them), and the feedback."""
        made = self._reward(problem, list(texts))
        parts = dict(made) if isinstance(made, Mapping) else {"reward": made}
        if not all(isinstance(value, numbers.Real) and not isinstance(value, bool) for value in parts.values()):
            raise TypeError(
                f"protocol {self.name!r}: the reward function returned {_shown(made)}: return a number, "
                "or the reward's parts as {name: number}"
            )
        feedback = ("",) * len(texts) if self._feedback is None else tuple(self._feedback(problem, list(texts)))
        return Outcome(reward=sum(parts.values()), parts=parts, feedback=feedback, output=None)

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """:attr:`neutral`, for every agent."""
        return self.neutral

    def text_if_cut(self, problem: Problem, agent: int) -> str | None:
        """What ``agent`` plays in place of a completion cut at the token budget: the neutral
        text, or ``None`` (the cut completion as it is) with ``play_cut``. A red team's cut
        "Answer: Paris" earned 1.0 where the math protocol counts a cut answer as none.
        Said once per protocol, as the reward function is then not called for it."""
        if not self.play_cut and not self._said_cut:
            self._said_cut = True
            warnings.warn(
                f"protocol {self.name!r}: a completion cut at the token budget plays the neutral text "
                f"{self.neutral!r} (a cut answer is no answer); FunctionProtocol(..., play_cut=True) gives your reward "
                "function the cut text instead",
                stacklevel=2,
            )
        return None if self.play_cut else self.neutral


def _shown(value: object) -> str:
    """``value`` as an error message shows it: its type and the head of its repr."""
    return f"{type(value).__name__} {reprlib.repr(value)}"
