"""The task protocol: what a benchmark must provide to be deliberated on."""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

SPLITS = ("train", "test")


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
        """The canonical decision in a model's ``text``, or ``None`` if there is none."""
        ...

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether ``decision`` answers ``problem`` correctly (``None`` never does)."""
        ...

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Decisions with equal keys agree (for consensus). Most tasks return the
        decision itself; code tasks group programs by behaviour."""
        ...


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
