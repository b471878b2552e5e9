"""Numeric answers: canonical form, extraction from model text, and a base for numeric tasks."""

from __future__ import annotations

import re
from collections.abc import Hashable
from fractions import Fraction

from deliberation_env.tasks.base import Problem

NUMERIC_INSTRUCTIONS = (
    "Solve the problem step by step. End with a line of the form 'The answer is N.' "
    "where N is a number."
)

_NUMBER = r"[-+]?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?"
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_MARKED = re.compile(rf"(?:####|answer is|answer:|answer =)\s*\**\s*({_NUMBER})", re.IGNORECASE)
_ANY = re.compile(_NUMBER)


def canonical_number(text: str) -> str | None:
    """The canonical string of a number written as text, or ``None``.

    Commas, currency signs, surrounding spaces, trailing periods and trailing zeros go;
    integers print without a decimal point, other values as the shortest exact decimal
    or as a reduced fraction.

    >>> [canonical_number(s) for s in ["1,000", "$18", "18.0", "-0.50", "6/4", "x"]]
    ['1000', '18', '18', '-0.5', '3/2', None]
    """
    cleaned = text.strip().rstrip(".").replace(",", "").replace("$", "").replace(" ", "")
    try:
        value = Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None
    if value.denominator == 1:
        return str(value.numerator)
    if "/" not in cleaned:
        return format(value.numerator / value.denominator, ".15g")
    return f"{value.numerator}/{value.denominator}"


def extract_number(text: str) -> str | None:
    """The final numeric answer in a model's text, canonical, or ``None``.

    Looks, in order, for the last ``\\boxed{...}``, the last "The answer is N" /
    "Answer: N" / "#### N", and the last number anywhere in the text.

    >>> extract_number("3 + 4 = 7, so the answer is 7.")
    '7'
    >>> extract_number("I made $1,250 in total.")
    '1250'
    >>> extract_number("no idea") is None
    True
    """
    for pattern in (_BOXED, _MARKED, _ANY):
        matches = pattern.findall(text)
        for match in reversed(matches):
            number = canonical_number(match)
            if number is not None:
                return number
    return None


class NumericTask:
    """Shared behaviour of tasks whose decisions are numbers (arithmetic, GSM8K, ...).

    Subclasses set ``name`` and implement ``problems(split)``.
    """

    name: str
    instructions: str = NUMERIC_INSTRUCTIONS

    def parse(self, problem: Problem, text: str) -> str | None:
        """The last numeric answer in ``text`` (see :func:`extract_number`)."""
        return extract_number(text)

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Exact match of canonical numbers."""
        return decision is not None and decision == problem.answer

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Canonical numbers agree when they are equal strings."""
        return decision
