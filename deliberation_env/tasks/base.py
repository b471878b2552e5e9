"""The task protocol: what a benchmark must provide to be deliberated on.

**Scoring.** Every *answer task* (every built-in task but HumanEval, whose decisions are
programs) takes one option, ``scoring``, that says which text holds a final answer:

- ``"strict"`` (the default): the text states its final answer in the form the task's
  ``instructions`` ask for ("The answer is N." for the numeric tasks, ``\\boxed{x}`` for
  MATH, AIME and AMC, "Answer: X" for MMLU and text JSONL); a number elsewhere in the
  text is not an answer, and statements of different answers in one text are no answer
  (a text cannot hedge). Held-out scores are strict.
- ``"lenient"``: the task's forgiving reader, the package's rule before strict scoring
  (the numeric tasks: the last boxed or "answer is" number, else the last number
  anywhere in the text). Where a score is lenient, it is named so.

Each task's docstring gives its exact grammar of both. A text cut at the token budget is
no answer under strict scoring; the task sees only text, so whoever knows the finish
reason applies that rule: the text env passes the text to play instead on in its
``text_if_cut`` info, the meta env reads the solvers' ``Answer.finish_reason``.
"""

from __future__ import annotations

import copy
import numbers
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

SPLITS = ("train", "test")
SCORINGS = ("strict", "lenient")
"""The values of an answer task's ``scoring`` option (see the module docstring)."""


@dataclass(frozen=True)
class Problem:
    """One problem of a task.

    Attributes:
        id: Stable identifier, unique within the task (used in seeds and result files).
        question: The problem statement shown to the agents.
        answer: The reference decision, in the task's canonical form.
        meta: Anything else the task keeps (level, subject, tests, ...).
    """

    id: str
    question: str
    answer: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Task(Protocol):
    """A benchmark. Decisions are canonical strings; ``None`` means "no parseable answer".

    Attributes:
        name: Registry name, e.g. ``"arithmetic"``.
        instructions: The answer-format instruction appended to every prompt.
    """

    name: str
    instructions: str

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split`` (``"train"`` or ``"test"``), in a fixed order."""
        ...

    def parse(self, problem: Problem, text: str) -> str | None:
        """The canonical decision in a model's ``text``, or ``None`` if there is none (an
        answer task: under its ``scoring``, see the module docstring)."""
        ...

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether ``decision`` answers ``problem`` correctly (``None`` never does)."""
        ...

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Decisions with equal keys agree (for consensus: :func:`answer_groups`, which
        also joins those a task's optional ``same_answer(problem, first, second)`` calls
        one). Most tasks return the decision itself; code tasks group programs by behaviour."""
        ...


@runtime_checkable
class AnswerTask(Task, Protocol):
    """A task whose decisions are final answers stated in a form its prompt asks for.

    Attributes:
        scoring: ``"strict"`` or ``"lenient"``: which text ``parse`` reads as a final
            answer (see the module docstring).
    """

    scoring: str


def check_scoring(scoring: str) -> str:
    """``scoring`` if it is one of :data:`SCORINGS`, else a ``ValueError`` saying what each means.

    >>> check_scoring("strict")
    'strict'
    """
    if scoring not in SCORINGS:
        raise ValueError(
            f"scoring must be 'strict' (only an answer stated in the asked form counts) or 'lenient' "
            f"(the task's forgiving reader), got {scoring!r}"
        )
    return scoring


def same_answer(task: Task, problem: Problem, first: str, second: str) -> bool:
    """Whether two decisions are one answer: the task's own ``same_answer(problem, first,
    second)`` in either order where it has one (MATH: equal keys or math-verify's
    equivalence, which is not symmetric, so ``x = 7`` and ``7`` agree), else equal decision
    keys. A team's vote groups by it.

    >>> from deliberation_env.tasks import get
    >>> task = get("math", path="sample")
    >>> problem = task.problems("test")[0]
    >>> same_answer(task, problem, "7", "x = 7"), same_answer(task, problem, "0.75", r"\\frac34"), same_answer(task, problem, "7", "8")
    (True, True, False)
    """
    own = getattr(task, "same_answer", None)
    if callable(own):
        return bool(own(problem, first, second) or own(problem, second, first))
    return task.decision_key(problem, first) == task.decision_key(problem, second)


def answer_groups(
    task: Task,
    problem: Problem,
    decisions: Sequence[str | None],
    correct: Sequence[bool] | None = None,
    keys: Sequence[Hashable | None] | None = None,
) -> list[int]:
    """Each decision's group for a vote: decisions with equal keys are one answer, and so
    are those the task's own ``same_answer`` calls one in either order (MATH: math-verify's
    equivalence, which is not symmetric), taken transitively (``x = 7``, ``7`` and ``y = 7``
    are one group in any seat order). Given ``correct``, a right answer is never one with a
    wrong one, and every right answer is one with every other: the vote that is paid never
    lets a wrong answer share a right one's (a key that rounds ``8 + 10^{-20}`` to 8 does
    not make it right; a program that passes only the prompt's examples is not a right
    one), nor lets a wrong answer join two right forms that the checker keeps apart
    (``x=3 \\text{ or } x=4`` and ``x_1 = 3, x_2 = 4``) into a group it then holds, and two
    right forms are not outvoted by two agreeing wrong answers. Both seats' votes group by it.

    Args:
        task: The task whose keys and checker say which decisions are one answer.
        problem: The problem they answer.
        decisions: Each agent's decision, ``None`` for no answer.
        correct: ``task.is_correct(problem, decision)`` of each, or ``None``: the groups
            the agents may see (no ground truth).
        keys: ``task.decision_key(problem, decision)`` of each, where the caller has them
            (else they are computed here, once each).

    Returns:
        Each decision's group, numbered in order of its first holder; -1 for ``None``.

    >>> from deliberation_env.tasks import get
    >>> task = get("math", path="sample")
    >>> problem = task.problems("test")[0]
    >>> decisions = ["7", None, "x = 7", "8"]
    >>> answer_groups(task, problem, decisions), answer_groups(task, problem, decisions, [True, False, False, False])
    ([0, -1, 0, 1], [0, -1, 1, 2])
    """
    if keys is None:
        keys = [None if decision is None else task.decision_key(problem, decision) for decision in decisions]
    rights = [None] * len(decisions) if correct is None else [bool(right) for right in correct]
    by_node: dict[Hashable, int] = {}  # each distinct (key, right): its first holder's index
    labels = [
        -1 if decision is None else by_node.setdefault((key, right), agent)
        for agent, (decision, key, right) in enumerate(zip(decisions, keys, rights, strict=True))
    ]
    own = getattr(task, "same_answer", None)
    if len(by_node) > 1:  # join the nodes that are one answer (union-find)
        root = {first: first for first in by_node.values()}

        def find(agent: int) -> int:
            while root[agent] != agent:
                agent = root[agent]
            return agent

        def one_answer(first: int, second: int) -> bool:
            if rights[first] != rights[second]:
                return False
            if rights[first]:  # both equal the reference
                return True
            return callable(own) and same_answer(task, problem, decisions[first], decisions[second])

        firsts = list(root)
        for a, first in enumerate(firsts):
            for second in firsts[a + 1 :]:
                one, other = find(first), find(second)
                if one != other and one_answer(first, second):
                    root[max(one, other)] = min(one, other)
        labels = [-1 if label < 0 else find(label) for label in labels]
    numbers: dict[int, int] = {}
    return [-1 if label < 0 else numbers.setdefault(label, len(numbers)) for label in labels]


def with_scoring(task: Task, scoring: str) -> Task:
    """``task`` reading its answers under ``scoring``: the task itself if it already does,
    else a shallow copy (sharing its loaded problems) with the other ``scoring``.

    A task that is no :class:`AnswerTask` (HumanEval, a user's task without the option)
    reads as it does under ``"strict"``, and has no ``"lenient"`` reading.

    >>> from deliberation_env.tasks import get
    >>> task = get("arithmetic")
    >>> with_scoring(task, "lenient").scoring, task.scoring
    ('lenient', 'strict')

    Raises:
        ValueError: On an unknown ``scoring``, or ``"lenient"`` for a task that is no
            :class:`AnswerTask`.
    """
    check_scoring(scoring)
    if not isinstance(task, AnswerTask):
        if scoring == "lenient":
            raise ValueError(f"task {task.name!r} has no lenient scoring (it takes no scoring option): use 'strict'")
        return task
    if task.scoring == scoring:
        return task
    rescored = copy.copy(task)
    rescored.scoring = scoring
    return rescored


def check_split(split: str) -> str:
    """Return ``split`` if it is a known split, else raise a ``ValueError``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    return split


def positive_int(name: str, value: Any) -> int:
    """``value`` as an ``int`` if it is an integer >= 1 (NumPy integers too, booleans not).

    >>> positive_int("limit", 3)
    3
    >>> positive_int("limit", True)
    Traceback (most recent call last):
    ...
    ValueError: limit must be an integer >= 1, got True

    Raises:
        ValueError: Naming the argument ``name`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def selection(name: str, values: Iterable[Any] | None) -> frozenset[Any] | None:
    """A selection argument (``levels``, ``types``, ``subjects``) as a set; ``None`` stays ``None``.

    Raises:
        TypeError: If ``values`` is a single string (``"Algebra"``, which would select its
            letters), naming ``name``.
        ValueError: If ``values`` is empty (which would select nothing), naming ``name``.
    """
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"{name} must be a list of values, not the string {values!r} (write [{values!r}])")
    chosen = frozenset(values)
    if not chosen:
        raise ValueError(f"{name} is empty, which selects no problems; use None for all")
    return chosen


def problem_count(n_problems: int, split_size: int, split: str, argument: str = "n_problems") -> int:
    """How many problems of a split to use when ``n_problems`` are asked for: all of them
    if the split has that many, else the whole split, with a warning that says so (a run
    then reports the number it used, never one it could not).

    >>> problem_count(4, 8, "test")
    4

    Args:
        n_problems: The number asked for (an integer >= 1).
        split_size: The number of problems the split has.
        split: The split's name, for the warning.
        argument: The option's name as the user wrote it (``"--n-problems"`` on the command line).

    Raises:
        ValueError: If ``n_problems`` is not an integer >= 1, or the split is empty.
    """
    n_problems = positive_int(argument, n_problems)
    if split_size < 1:
        raise ValueError(f"the {split} split has no problems, so there is nothing to take {argument}={n_problems} of")
    if n_problems > split_size:
        warnings.warn(
            f"{argument}={n_problems} is more than the {split_size} problems of the {split} split: "
            f"using all {split_size} ({argument}={split_size} or fewer says so without this warning)",
            UserWarning,
            stacklevel=2,
        )
        return split_size
    return n_problems
