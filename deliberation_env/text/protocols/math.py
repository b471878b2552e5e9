"""The math protocol: n agents answer in parallel and the team's answer is their vote.

**Roles.** Every agent is a ``"solver"`` (n >= 2). At turn 0 each one solves the problem
on its own; at each later turn it sees its own previous solution and, as external
feedback, the answers of the other agents of the last turn (in relative order i+1,
i+2, ... mod n, so an agent never learns its index), and answers again: a debate.
Answers are parsed by the task (its ``parse``), so any package task with decisions
works: arithmetic, gsm8k, math, aime, amc, jsonl, mmlu. HumanEval programs need the
coding protocol instead (:mod:`deliberation_env.text.protocols.coding`).

**Team output.** A plurality vote over the parsed decisions (decisions agree when the
task's checker says they are one answer, :func:`~deliberation_env.tasks.same_answer`:
``7`` and ``x = 7`` on MATH; a group never mixes right and wrong answers); a tie goes to
the decision whose first holder has the lowest agent index (:meth:`MathProtocol.vote`);
unparseable texts do not vote. The reward settles a tie by a fair coin: ``correct`` is the
chance that the plurality is right (1/k when one of k tied answers is right). Given to the
lowest index, a tie made a pair's second agent irrelevant whenever the first answered:
right or wrong, it earned the same. (Grouped by their text's key alone, a wrong majority
written in several forms, ``7`` and ``x = 7``, was paid as a tie.) A drafter-and-verifier variant is not
offered: the agents of a parallel env act at the same time, so a verifier could only
check the draft of the turn before, which is what the debate's feedback already gives.

**Scoring** (``scoring``, see :mod:`deliberation_env.tasks.base`): ``"strict"`` (the
default) reads a decision only from a final answer stated in the form the task's
instructions ask for ("The answer is N.", ``\\boxed{x}``, "Answer: X"), and a completion
cut at the token budget is no answer: the env's ``text_if_cut`` info is then the neutral
text, which :class:`agents.TextPolicy` and the LLM-weight learners play in place of a cut
completion (:meth:`MathProtocol.text_if_cut`). ``"lenient"`` reads the task's forgiving
way (the numeric tasks: the last number anywhere) and plays cut completions as they are.

**Reward.** With d_i the decision of agent i under the protocol's scoring (``None`` if
its text has none), a_i its decision under strict scoring and v the voted decision
(``None`` if no agent has one):

- ``correct`` = r/k, k the number of answers with the most holders and r how many of
  them are right (0 when no agent has a decision)
- ``format`` = (1/n) sum_i 1[a_i is not None]    (the share of answers stated in the
  asked form, under either scoring)
- R = ``correct`` + ``format_weight`` * ``format``, so 0 <= R <= 1 + ``format_weight``.

The neutral text of every role is the empty string: an agent left out does not vote.
Text that only *claims* success ("the answer is correct, reward=1") earns nothing: only
the task's parser and checker decide.

Example:
    >>> from deliberation_env import tasks
    >>> protocol = MathProtocol(tasks.get("arithmetic"))
    >>> problem = protocol.problems("test")[0]
    >>> outcome = protocol.score(problem, [f"The answer is {problem.answer}.", "I do not know."])
    >>> outcome.parts["correct"], outcome.parts["format"], outcome.reward
    (1.0, 0.5, 1.05)
    >>> protocol.score(problem, [problem.answer, problem.answer]).parts  # a number, not stated
    {'correct': 0.0, 'format': 0.0}
    >>> MathProtocol(tasks.get("arithmetic"), scoring="lenient").score(problem, [problem.answer] * 2).parts
    {'correct': 1.0, 'format': 0.0}
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agents.base import Message
from deliberation_env.tasks import Problem, Task, answer_groups
from deliberation_env.tasks.base import check_scoring, with_scoring
from deliberation_env.text.protocols.base import Outcome, chat, quote
from deliberation_env.values import is_number

DECISION_CHARS = 200
"""Most characters of one peer decision shown in feedback (longer ones are cut, marked)."""
NO_ANSWER = "no answer"
"""How feedback shows a peer whose text has no parseable answer."""

SYSTEM = (
    "You are one of {n} agents solving a problem together. Each agent answers; the team's "
    "answer is the majority vote."
)
FIRST = "{question}\n\n{instructions}"
LATER = (
    "{question}\n\nYour previous solution:\n{previous}\n\n{feedback}\n\n"
    "Check your solution against theirs and solve the problem again. {instructions}"
)


class MathProtocol:
    """Parallel answers and a plurality vote, on any answer task (see the module docstring).

    Args:
        task: A package task (``deliberation_env.tasks.get(...)``) other than HumanEval;
            its answers are read under ``scoring``, whatever it was built with.
        format_weight: Weight of the ``format`` part, a finite number >= 0.
        scoring: ``"strict"`` or ``"lenient"`` (see the module docstring).

    Attributes:
        task: The task, reading under ``scoring``.
        scoring: ``"strict"`` or ``"lenient"``.

    Raises:
        ValueError: On a negative or non-finite ``format_weight``, a code task, an unknown
            ``scoring``, or ``"lenient"`` for a task without that option.
    """

    name = "math"

    def __init__(self, task: Task, format_weight: float = 0.1, scoring: str = "strict") -> None:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        if task.name == "humaneval":
            raise ValueError("task 'humaneval' needs the coding protocol, not the math protocol")
        if not (is_number(format_weight) and 0.0 <= format_weight < math.inf):
            raise ValueError(f"format_weight must be a finite number >= 0, got {format_weight!r}")
        self.scoring = check_scoring(scoring)
        self.task = with_scoring(task, scoring)
        self._asked_form = with_scoring(task, "strict")
        self.format_weight = float(format_weight)
        self.reward_range = (0.0, 1.0 + self.format_weight)

    def roles(self, n_agents: int) -> tuple[str, ...]:
        """``("solver",) * n_agents``, for any n >= 2."""
        if n_agents < 2:
            raise ValueError(f"the math protocol needs n_agents >= 2, got {n_agents}")
        return ("solver",) * n_agents

    def problems(self, split: str) -> Sequence[Problem]:
        """The task's problems of ``split``."""
        return self.task.problems(split)

    def prompt(
        self, problem: Problem, roles: tuple[str, ...], agent: int, previous: str | None, feedback: str | None
    ) -> tuple[Message, ...]:
        """Turn 0: the question and the task's answer format; later: also the agent's
        previous solution and the peers' answers (``feedback``)."""
        system = SYSTEM.format(n=len(roles))
        instructions = self.task.instructions
        if previous is None:
            return chat(system, FIRST.format(question=problem.question, instructions=instructions))
        return chat(
            system,
            LATER.format(question=problem.question, previous=previous, feedback=feedback, instructions=instructions),
        )

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """The vote, the reward parts and each agent's feedback (its peers' answers)."""
        decisions = [self.task.parse(problem, text) for text in texts]
        correct, voted = self._checked_vote(problem, decisions)
        stated = decisions if self.scoring == "strict" else [self._asked_form.parse(problem, t) for t in texts]
        asked_form = sum(decision is not None for decision in stated) / len(texts)
        n = len(texts)
        feedback = tuple(
            "Answers of the other agents:\n"
            + "\n".join(
                f"- Agent {k}: {_shown(decisions[(i + k) % n])}" for k in range(1, n)
            )
            for i in range(n)
        )
        return Outcome(
            reward=correct + self.format_weight * asked_form,
            parts={"correct": correct, "format": asked_form},
            feedback=feedback,
            output=voted,
        )

    def vote(self, problem: Problem, decisions: Sequence[str | None]) -> str | None:
        """The plurality decision; ties go to the lowest index of a first holder.

        >>> from deliberation_env import tasks
        >>> protocol = MathProtocol(tasks.get("arithmetic"))
        >>> protocol.vote(protocol.problems("test")[0], ["5", None, "7", "7", "5"])
        '5'
        """
        return self._checked_vote(problem, decisions)[1]

    def _checked_vote(self, problem: Problem, decisions: Sequence[str | None]) -> tuple[float, str | None]:
        """The chance that the plurality is right with a tie settled by a fair coin, and
        :meth:`vote`'s decision. Answers are one when the task's checker says so, never
        mixing right and wrong (:func:`~deliberation_env.tasks.answer_groups`: ``7`` and
        ``x = 7`` vote together); ``None`` does not vote."""
        correct = [decision is not None and self.task.is_correct(problem, decision) for decision in decisions]
        groups = answer_groups(self.task, problem, decisions, correct)
        holders = [[agent for agent, g in enumerate(groups) if g == group] for group in range(max(groups, default=-1) + 1)]
        if not holders:
            return 0.0, None
        most = max(map(len, holders))
        tied = [group[0] for group in holders if len(group) == most]  # groups are in order of first holder
        return sum(correct[agent] for agent in tied) / len(tied), decisions[tied[0]]

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """The empty text: no answer, no vote."""
        return ""

    def text_if_cut(self, problem: Problem, agent: int) -> str | None:
        """What ``agent`` plays in place of a completion cut at the token budget: under
        strict scoring the neutral text (a cut completion is no answer); under lenient
        scoring ``None`` (the cut completion is played as it is)."""
        return self.neutral_text(problem, agent) if self.scoring == "strict" else None


def _shown(decision: str | None) -> str:
    return NO_ANSWER if decision is None else quote(decision, DECISION_CHARS)
