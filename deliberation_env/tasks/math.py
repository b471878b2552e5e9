"""Competition mathematics: MATH, AIME and AMC, checked with ``math-verify``.

Data (where to get each and its exact format: ``docs/data.md``; directories, single
files, ``"hf:<dataset>"`` and ``"sample"``: :mod:`deliberation_env.tasks.sources`):

- ``math``: MATH-format JSONL, one problem per line with ``problem`` and ``solution``
  (whose last ``\\boxed{...}`` is the reference; an ``answer`` field, as in MATH-500,
  takes precedence), optional ``level`` (``"Level 5"`` or ``5``) and ``type`` (MATH-500
  calls it ``subject``), kept in ``Problem.meta``; ``levels`` and ``types`` select problems.
  ``path="sample"``: 4 problems of each split ship with the package.
- ``aime``, ``amc``: JSONL with ``problem`` and ``answer`` (no sample ships: the problems
  are the MAA's).

A directory with ``train.jsonl`` and ``test.jsonl`` keeps its own split (one of the two
is enough for the split it holds). A single file is split by a hash of the normalized
problem text (``test_fraction`` of it in test, half by default), so copies of a problem
land in the same split. Problem ids are ``<task>:<the record's unique_id or id>``, else
``<task>:<split>-<index in split>``, and must be unique within a task.

Decisions are the model's final answer as a LaTeX string, read under the task's
``scoring`` option:

- ``"strict"`` (the default; the prompt asks for ``\\boxed{}``): the content of the
  ``\\boxed{...}`` (braces balanced; a box inside a box is part of its content) when
  every box of the text holds the same text, up to whitespace, and is followed on its
  line by nothing but closing markup and punctuation (spaces, ``$``, ``**``, ``\\)``,
  ``\\]``, ``.``, ``!``); a text without a box, with boxes of different texts
  (``\\boxed{2} or \\boxed{3}``, and ``\\boxed{0.5}`` then ``\\boxed{\\frac12}``), or
  with more after a box on its line (``\\boxed{2} (or 3)``, ``\\boxed{2} cm``), has none
  (:func:`stated_answer`); so has a box that offers a second value math-verify would not
  compare, in a part it does not read or after a relation it reads as its left side
  (``\\boxed{2 \\text{ (could be 3)}}``, ``\\boxed{2 \\approx 3}``, each read as 2;
  :func:`offers_alternatives`), and so has a text whose later line offers another value
  (``\\boxed{19}`` then a line "or maybe 20", or "Wait, that's wrong: it's $10$";
  :func:`~deliberation_env.tasks.hedges.hedges_after`).
- ``"lenient"``: the content of the last ``\\boxed{...}``, else what follows the last
  "The answer is" (:func:`extract_answer`).

Under either, an answer whose reading ran out of time (see "Time limits") is none.

Two decisions are the same answer when ``math-verify`` says so (``\\frac{1}{2}``, ``0.5`` and
``\\dfrac12``; ``[1,3)`` and ``\\left[1,3\\right)``; ``3\\sqrt{2}`` and ``\\sqrt{18}``).
For consensus, :meth:`MathTask.decision_key` groups answers by math-verify's parsed
expression (cheap and exact for equal forms; ``0.5`` and ``1/2`` agree, algebraically
equal but differently written expressions may not).

Time limits: every parse, the reading of what it parsed (its depth, size and key) and every
comparison is limited to :data:`CHECK_TIMEOUT_S` seconds. math-verify implements the limit
with ``SIGALRM``, which only works in the main thread; called from another thread the checks
run without a limit, and an alarm does not stop sympy's work in C. So an answer deeper than
:data:`MAX_DEPTH` is compared as text; a reading that ran out of time twice is no parse for
the rest of the process (the last 8,192 such answers are remembered); and the package's own
evaluation of an answer (its size, a rounding, the sides of an equation) computes in double
precision over a few hundred nodes at most
(:func:`~deliberation_env.tasks.expression_values.numeric_value`), calling sympy's ``evalf``
only where that has no value and the number is bounded (``\\Gamma(\\frac{1}{3})``; never
``\\sin(10^{10^{10}})``: :func:`too_large`). Two plain expressions whose values differ at a
point of their variables are unequal without math-verify (:func:`values_differ`: its
``simplify`` took the whole limit for ``\\cos((x+1)^{5})``), and an answer whose expansion
or nesting of trigonometric functions would cost seconds is compared as text
(:func:`too_costly`). Left open: two answers equal in value at both trial points whose
``simplify`` is slow (a costly form against its own expansion) still cost the limit, as
does an answer math-verify cannot value in double precision (an unknown function).
"""

from __future__ import annotations

import cmath
import functools
import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Hashable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import sympy
from math_verify import LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException
from math_verify.utils import timeout as math_verify_timeout
from sympy.concrete.expr_with_limits import ExprWithLimits

from deliberation_env.tasks.base import Problem, check_scoring, selection
from deliberation_env.tasks.expression_values import numeric_value
from deliberation_env.tasks.hedges import DOUBT_WORDS, NUMBER_WORDS, WORD_VALUES, hedges_after
from deliberation_env.tasks.lookalikes import as_read
from deliberation_env.tasks.sources import (
    TEST_FRACTION,
    SplitsFromSource,
    check_unique_ids,
    load_splits,
    question_key,
    require,
    require_answer,
    resolve_source,
)

CHECK_TIMEOUT_S = 5
"""Seconds allowed to each math-verify parse, to the reading of what it parsed, and to each
comparison (main thread only)."""

MATH_INSTRUCTIONS = (
    "Solve the problem step by step. Put your final answer, in simplest form, "
    "in \\boxed{} at the end, e.g. \\boxed{\\frac{3}{4}}."
)

_BOXED = "\\boxed"
_BRACES = re.compile(r"\\boxed\{|\{|\}")
_CLOSING = re.compile(r"(?:[^\S\n]|[$*.!]|\\[)\]])*(?:I hope it is correct\.?[^\S\n]*)?(?:\n|$)")  # the rest of a line
_RELATIONS = re.compile(r"\\(?:approx|approxeq|thickapprox|simeq|sim|lor|vee)(?![a-zA-Z])|[≈≃∼≅∨]")
_ROUNDING = re.compile(r"\s*(.+?)\s*(?:\\(?:approx|approxeq|thickapprox|simeq)|[≈≃≅])\s*(-?\d+\.\d+)\s*")
_DIGITS = re.compile(r"(?<![\^\d])\d+")  # digit runs but exponents (``cm^2``)
_QUALIFIERS = (
    "wrong", "incorrect", "mistaken?", "false", "nope", r"retract\w*", "presumably", "likely", "ish", "give or take",
    r"(?<!does )(?<!do )not(?!\s+(?:count(?:ing)?|includ(?:ing|e)|matter)\s+(?:the|a|an|any|rotations?|reflections?|order)\b)",
    "approx(?:imately)?", "roughly", r"(?:about|around)(?!\s+(?:the|a|an)\b)",
    "nearly", "almost", "guess(?:ed)?", "estimated?", r"(?:lower|upper) bound",
    r"or (?:more|less|so|fewer|greater|higher|lower|above|below|over|under|the next|its successor)", "and up",
    "at (?:least|most)", "unless", "if",
)  # fmt: skip
"""Words that take back or loosen a boxed value (round twenty-two: ``18 \\text{ is wrong}``,
``18 \\text{ or more}``, ``18 \\text{ (lucky guess)}`` read as 18)."""
_DOUBT = re.compile(rf"\?|\b(?:{'|'.join(DOUBT_WORDS + NUMBER_WORDS + _QUALIFIERS)}|[ivx]{{2,}})\b", re.IGNORECASE)
"""Words of doubt or qualifiers, and numbers in words or Roman numerals: in a part of a box
math-verify does not read, a second value or no firm one."""
_NUMBER_EQUALS = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*=|=\s*-?\d+(?:\.\d+)?\s*=")
"""A number equated to something ("3 = 2", "x = 3 = 2"): math-verify reads the last side."""
_DEGREES = re.compile(r"\\circ|°")
_GROUP_SPACE = re.compile(r"\\[,;:! ]|~|\{,\}")
"""LaTeX spaces that group a number's digits by thousands (``\\,``, ``\\ ``, ``~``, ``{,}``)."""
_DECIMAL_COMMA = re.compile(r"(?<=(?<![\d.])0)\{,\}(?=\d)|(?<=\d)\{,\}(?=(?:\d{1,2}|\d{4,})(?!\d))")
"""A decimal comma (``3{,}14``, ``0{,}125``): not three digits after it, or a whole part of 0."""
_GROUPED = re.compile(
    rf"(?<![\d.~^_])(?<!\\[,;:! ])(?<![\^_]\{{)[1-9]\d{{0,2}}(?:(?:{_GROUP_SPACE.pattern})\d{{3}})+(?![\d])"
    rf"|(?<=\.)\d{{3}}(?:(?:\\[,;: !]|~)\d{{1,3}})+(?![\d])"
)
"""A number whose whole digits are grouped by threes with those spaces (not an exponent's,
and not a decimal comma's ``0{,}125``), or the digits of a decimal part grouped by spaces
in threes (``3.141\\,59``)."""
_SPACED_NUMBERS = re.compile(r"\d\s*(?:\\(?:q?quad|[,;: ])\s*|~\s*)+[-+]?\d(?!\d*\s*/)")
"""Two numbers with only space between them (``2 \\quad 3``, ``2\\,3``): math-verify reads
them as one expression (a product or a sum), so a box of them offers two values."""
_PLAIN_NUMBER = re.compile(r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)\s*")
_TEXT_ALIAS_NAMES = ("textrm", "textsf", "texttt", "textup", "textsc", "textnormal", "emph")
"""Text wrappers math-verify does not read as ``\\text`` (:func:`ungrouped` rewrites them)."""
_TEXT_WRAPPER = re.compile(rf"\\(?:text|textbf|textit|mathrm|mbox|{'|'.join(_TEXT_ALIAS_NAMES)})\s*+\{{([^{{}}]*)\}}")
_MATH_DELIMITERS = re.compile(r"\$|\\[()\[\]]")
_STATES = re.compile(r"[=<>&]|\\(?:implies|Rightarrow|rightarrow|to|iff|le|ge|leq|geq|neq|approx)(?![a-zA-Z])")
"""What makes LaTeX a statement rather than a value offered (``x = 3``, ``a < b``)."""
_PERCENT_ASIDE = re.compile(r"(?<!\s)\s*\(\s*[\d.]+\s*\\?%\s*\)?\s*$")
"""A value's percentage in parentheses after it ("0.5 (50%)")."""
_END_MARKS = re.compile(r"\\(?:blacksquare|square|Box|qed|checkmark)(?![a-zA-Z])|[∎✓✔]")
_VARIABLE_IS = re.compile(r"^[a-zA-Z]\s*=\s*(?=[^=]*$)")
"""A variable set to the value offered ("x = 10"): the value is what follows."""
_UNIT_AFTER = re.compile(r"(?<=[\d}])\s+[a-zA-Z]{2,}\.?$")
"""A unit word after a value offered ("10 cm")."""
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*\\?%")
_CONSTANT = re.compile(r"\\(?:pi|infty|emptyset|varnothing)(?![a-zA-Z])")
_COMMAND = re.compile(r"\\[a-zA-Z]+")
_WORD = re.compile(r"[A-Za-z]{2,}")
_ANSWER_IS = re.compile(r"answer is(?>\s*:?\s*)(.*)", re.IGNORECASE)
# the run after the head is atomic: a run of newlines matched both ``\s*`` and not ``.``, and was
# split every way between them (a minute for 100,000 newlines); so is the run of unclosed boxes
# that ``last_boxed`` once rescanned from each of them
_LATEX_EXTRACTION = (LatexExtractionConfig(),)


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` in ``text`` with balanced braces and
    something in it (nested braces allowed; one pass over the text).

    >>> last_boxed(r"so \\boxed{2} or rather \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> last_boxed(r"\\boxed{\\frac{1}{2}") is None, last_boxed(r"\\boxed{2} then \\boxed{ }")
    (True, '2')
    """
    last: tuple[int, int] = (-1, -1)  # the start and end of the content of the last box found
    opened: list[int | None] = []  # per open brace: where its content starts, if a box's
    for match in _BRACES.finditer(text):
        if match.group() != "}":
            opened.append(match.end() if match.group() != "{" else None)
        elif opened and (start := opened.pop()) is not None and start > last[0] and text[start : match.start()].strip():
            last = (start, match.start())
    return text[last[0] : last[1]].strip() if last[0] >= 0 else None


def outer_boxes(text: str) -> list[str]:
    """The contents of the ``\\boxed{...}`` of ``text`` with balanced braces that lie in no
    other box, in order (linear in the text's length).

    >>> outer_boxes(r"\\boxed{1} and \\boxed{\\frac{1}{\\boxed{2}}} but \\boxed{3")
    ['1', '\\\\frac{1}{\\\\boxed{2}}']
    """
    return [text[start:end].strip() for start, end in _outer_box_spans(text)]


def _outer_box_spans(text: str) -> list[tuple[int, int]]:
    """Where the contents of :func:`outer_boxes` lie: (start, end) of each, in order; the
    box's closing brace is at ``end``."""
    spans: list[tuple[int, int]] = []
    opened: list[tuple[bool, int | None]] = []  # per open brace: a box's? where an outer box's content starts
    boxes = 0  # boxes open
    for match in _BRACES.finditer(text):
        if match.group() == "}":
            if opened:
                box, start = opened.pop()
                boxes -= box
                if start is not None:
                    spans.append((start, match.start()))
        else:
            box = match.group() != "{"
            opened.append((box, match.end() if box and not boxes else None))
            boxes += box
    return spans


def stated_answer(text: str) -> str | None:
    """The final answer ``text`` states in the asked form (strict scoring), or ``None``:
    the whitespace-normalized content of its outer boxes when they all hold the same text
    and each ends its line but for closing markup and punctuation.

    >>> stated_answer("So $\\\\boxed{\\\\frac{1}{2}}$.\\nThat is \\\\boxed{ \\\\frac{1}{2} }.")
    '\\\\frac{1}{2}'
    >>> stated_answer(r"\\boxed{2} or \\boxed{3}"), stated_answer(r"\\boxed{2} (or 3)"), stated_answer("The answer is 2.")
    (None, None, None)
    >>> stated_answer("\\\\boxed{19}\\nor maybe 20") is None  # doubt and another value after the box's line
    True
    """
    spans = _outer_box_spans(text)
    answers = {_boxed_answer(text, start, end) for start, end in spans} - {""}
    if len(answers) != 1 or None in answers:
        return None
    answer = answers.pop()
    if states_nothing(answer):
        return None
    rest = text[_CLOSING.match(text, spans[-1][1] + 1).end() :]  # the lines after the last box's
    rest = as_read(_TEXT_WRAPPER.sub(r"\1", rest))
    compared = []  # math-verify comparisons made: a few at most, each cut at CHECK_TIMEOUT_S

    def differs(stated: str, offered: str) -> bool:
        if _squeeze(offered) == stated or _rounds_to(offered, stated):
            return False
        compared.append(offered)
        return len(compared) > MAX_COMPARISONS or not equivalent(stated, offered)

    return None if hedges_after(rest, answer, _offered_expression, differs) else answer


MAX_COMPARISONS = 3
"""math-verify comparisons of values offered after a box, at most: past them the text has
hedged (honest texts restate the answer once or twice; each comparison may take seconds)."""


def _offered_expression(fragment: str) -> str | None:
    """The expression a fragment of a line after the answer is, when it is one value (a
    number in one word, a percentage, or LaTeX with a digit or a single letter and without
    words, relations or equations; ``x = 10`` is 10, a unit after it is left out), else
    ``None``. Marks of the end of a proof (``\\blacksquare``, ``\\checkmark``) are no value."""
    if fragment.lower() in WORD_VALUES:
        return WORD_VALUES[fragment.lower()]
    core = _squeeze(_END_MARKS.sub(" ", _PERCENT_ASIDE.sub("", _MATH_DELIMITERS.sub(" ", fragment))))
    core = _UNIT_AFTER.sub("", _VARIABLE_IS.sub("", core))
    percent = _PERCENT.fullmatch(core)
    if percent:
        return str(Fraction(percent.group(1)) / 100)
    if not core or len(core) > 80 or _STATES.search(core) or _WORD.search(_COMMAND.sub(" ", core)):
        return None
    return core if re.search(r"\d", core) or re.fullmatch(r"[A-Za-z]", core) or _CONSTANT.search(core) else None


def _rounds_to(offered: str, stated: str) -> bool:
    """Whether ``offered`` is a decimal that ``stated`` rounds to (``6.28`` for ``2\\pi``,
    ``0.5`` for ``\\frac12``): within half its last place."""
    decimal = re.fullmatch(r"-?\d+\.(\d+)", offered.strip())
    parsed = _parsed(stated) if decimal else ()
    if not parsed:
        return False
    value = numeric_value(parsed[0])  # None: not a number (a set, an equation, ...) or too costly
    if value is None:
        return False
    return value.imag == 0 and abs(value.real - float(offered)) <= 0.5 * 10 ** -len(decimal.group(1)) + 1e-12


def offers_alternatives(answer: str, reference: str) -> bool:
    """Whether a boxed ``answer`` offers a second value that math-verify would not compare:
    a digit or a word of doubt (maybe, not sure, ``?``, ...) in a part of the box it does
    not read (``2 \\text{ (or 3)}`` and ``2 \\text{ (not sure)}`` read as 2; ``12
    \\text{ cm}^2`` drops only a unit), an equation of a number (``3 = 2`` reads as 2), or
    a relation it reads as its left side (``\\approx``, ``\\simeq``, ``\\sim``, ``\\lor``,
    ``\\vee``) where the ``reference`` has none, but for a value and its rounding
    (``\\frac13 \\approx 0.333``). A list or "or" of values is read whole
    (``x = 2 \\text{ or } x = 3`` is a set), so it offers nothing hidden.

    >>> offers_alternatives(r"2 \\text{ (or 3)}", "2"), offers_alternatives(r"2 \\approx 3", "2")
    (True, True)
    >>> offers_alternatives(r"12 \\text{ cm}^2", "12"), offers_alternatives(r"x = 2 \\text{ or } x = 3", "2, 3")
    (False, False)
    >>> offers_alternatives(r"2\\sqrt{3} \\approx 3.46", r"2\\sqrt3"), offers_alternatives(r"2\\sqrt{3} \\approx 3.6", r"2\\sqrt3")
    (False, True)
    >>> offers_alternatives(r"18 \\text{ is wrong}", "18"), offers_alternatives(r"18 \\text{ or more}", "18")
    (True, True)

    Where the reference is an option's letter (``\\text{(C)}``), so is a second letter in a
    part math-verify does not read: ``C \\text{ (or A)}`` was read as C (red team 32).

    >>> offers_alternatives(r"C \\text{ (or A)}", r"\\text{(C)}"), offers_alternatives(r"\\text{(C)}", r"\\text{(C)}")
    (True, False)
    """
    if _RELATIONS.search(answer) and not _RELATIONS.search(reference):
        return not _rounded(answer)
    if _PLAIN_NUMBER.fullmatch(ungrouped(answer)):  # nothing hidden (math-verify writes 0.5 as \frac{1}{2})
        return False
    if _NUMBER_EQUALS.search(answer):  # "3 = 2": math-verify reads the right side alone
        return True
    if _SPACED_NUMBERS.search(ungrouped(answer)):  # "2 \quad 3": read as one expression of both
        return True
    parsed = _parsed(answer)
    if len(parsed) < 2:  # not read as mathematics: compared as text, whole
        return False
    if _equates_other_numbers(parsed[0], answer):  # "{2} = 3", "1+1 = 3": read as their right side
        return True
    read = _written(parsed[1], answer)
    unread_digits = _digits(answer) - _digits(read)
    if unread_digits or len(_DOUBT.findall(answer)) > len(_DOUBT.findall(read)):
        return True
    return _is_option(reference) and bool(_option_letters(answer) - _option_letters(read))  # "C \text{ (or A)}"


_OPTION = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{\s*\(?([A-E])\)?\s*\}|\(?([A-E])\)?")
"""A reference that is an option's letter (``\\text{(C)}``, ``(C)``, ``C``)."""
_OPTION_LETTER = re.compile(r"(?<![A-Za-z])[A-E](?![A-Za-z])")


def _is_option(reference: str) -> bool:
    """Whether ``reference`` is an option's letter (an AMC-style MATH answer)."""
    return _OPTION.fullmatch(reference.strip()) is not None


def _option_letters(latex: str) -> Counter[str]:
    """The capital letters A to E standing alone in ``latex``, outside its commands, counted."""
    return Counter(_OPTION_LETTER.findall(_COMMAND.sub(" ", latex)))


def _equates_other_numbers(expr: Any, answer: str) -> bool:
    """Whether ``expr`` is an equation of two numbers that differ (``2 = 3``, ``1 + 1 = 3``):
    math-verify reads such an equation as its right side, so its left side is a second value
    offered. An equation that holds (``3 \\times 4 = 12``), or one whose side has no value
    here (``f(2) = 5``, ``\\gcd(12, 18) = 6``: :func:`numeric_value`), offers one value; so
    does one in degrees (``\\cos 60^\\circ = \\frac12``: math-verify drops the degree sign)."""
    if not isinstance(expr, sympy.Equality) or expr.lhs.free_symbols or _DEGREES.search(answer):
        return False
    left, right = numeric_value(expr.lhs), numeric_value(expr.rhs)
    return left is not None and right is not None and not cmath.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)


def _digits(latex: str) -> Counter[str]:
    """The digits of ``latex``, counted, but those of exponents (``cm^2``)."""
    return Counter("".join(_DIGITS.findall(latex)))


def _rounded(answer: str) -> bool:
    """Whether ``answer`` is a value and its rounding, ``X \\approx d.ddd``: ``d.ddd`` a
    decimal within half its last place of X (``\\frac13 \\approx 0.333``)."""
    found = _ROUNDING.fullmatch(answer)
    return found is not None and _rounds_to(found.group(2), found.group(1))


def _boxed_answer(text: str, start: int, end: int) -> str | None:
    """The whitespace-normalized content of the box whose content is ``text[start:end]``,
    or ``None`` when more than closing markup and punctuation follows it on its line."""
    return _squeeze(text[start:end]) if _CLOSING.match(text, end + 1) else None


NON_ANSWERS = frozenset({
    "i don't know", "i do not know", "i dont know", "don't know", "dont know", "idk", "unknown", "no answer",
    "n/a", "na", "not sure", "unsure", "no idea", "cannot answer", "can't answer", "can't say", "not known",
    "i'm not sure", "i am not sure", "im not sure", "no clue", "n.a", "tbd", "pass", "skip",
    "i don't know the answer", "i do not know the answer", "answer unknown",
})  # fmt: skip
"""Box contents that state no answer (lower case, without ``\\text{}`` and the punctuation
around them): a box of them paid the asked form and voted (red team)."""
_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]+")
_TEXT_ALIASES = re.compile(rf"\\(?:{'|'.join(_TEXT_ALIAS_NAMES)})(?=\s*+\{{)")
_EMPTY_SET_NAMES = re.compile(r"\\(?:varnothing|O|empty)(?![a-zA-Z])")
"""LaTeX's other names of the empty set, read as ``\\emptyset`` (:func:`ungrouped`)."""
_EMPTY_SET = re.compile(r"\\\{(?:\s|\\[,;:! ])*\\\}")
"""``\\{ \\}`` and ``\\{\\,\\}``: the empty set, which math-verify cannot read with a space in it."""


def states_nothing(answer: str) -> bool:
    """Whether a box's content states no answer: one of :data:`NON_ANSWERS` (read without
    ``\\text{}``-like wrappers, case or the punctuation around it), or no letter, digit,
    infinity or empty-set sign outside LaTeX commands and no mathematical object that
    math-verify reads but a bare symbol (``?``, ``-``, ``\\text{?}``, ``\\ldots``, ``\\quad``).

    >>> states_nothing("?"), states_nothing(r"\\text{I don't know?}"), states_nothing(r"\\text{(C)}"), states_nothing("x")
    (True, True, False, False)
    >>> states_nothing("\u2205"), states_nothing("\u221e"), states_nothing(r"\\emptyset"), states_nothing(r"\\pi")
    (False, False, False, False)
    >>> states_nothing(r"\\text{?}"), states_nothing(r"\\ldots"), states_nothing(r"\\{ \\}")
    (True, True, False)
    """
    plain = answer
    while (unwrapped := _TEXT_WRAPPER.sub(r"\1", plain)) != plain:
        plain = unwrapped
    if _EMPTY_SET.fullmatch(plain.strip()):
        return False
    stated = plain.strip(" .!?$\\{}()").lower().replace("\u2019", "'")
    if not stated or stated in NON_ANSWERS:
        return True
    bare = _LATEX_COMMAND.sub(" ", plain)
    if any(character.isalnum() or character in "\u221e\u2205" for character in bare):  # but infinity, the empty set
        return False
    return not any(isinstance(value, sympy.Basic) and not isinstance(value, sympy.Symbol) for value in _parsed(answer))


def extract_answer(text: str) -> str | None:
    """The final answer in a model's text under lenient scoring, as a whitespace-normalized
    string, or ``None``.

    The last ``\\boxed{...}``, else the rest of the line after the last "The answer is"
    (without surrounding ``$``/``\\(...\\)`` and a final period).

    >>> extract_answer("Adding, we get $x = 3$. The answer is $\\\\frac{3}{4}$.")
    '\\\\frac{3}{4}'
    >>> extract_answer("I do not know.") is None
    True
    """
    answer = last_boxed(text)
    if answer is None:
        matches = _ANSWER_IS.findall(text)
        if not matches:
            return None
        answer = matches[-1].strip().rstrip(".").strip()
        answer = answer.removeprefix("\\(").removesuffix("\\)").strip("$ ")
    answer = _squeeze(answer)
    return None if not answer or states_nothing(answer) else answer


def _squeeze(text: str) -> str:
    """``text`` with runs of whitespace made single spaces, stripped."""
    return " ".join(text.split())


class _Reading(NamedTuple):
    """What math-verify read in an answer string, and the answer's key."""

    forms: tuple[Any, ...]
    """math-verify's parse: the expression, then the string it read; empty for no parse."""
    key: str
    """:func:`answer_key`: sympy's text of the expression, else the squeezed answer."""
    cut: bool = False
    """The reading ran out of time (this time, or :data:`TIMEOUT_ATTEMPTS` times)."""


def _parsed(answer: str) -> tuple[Any, ...]:
    """math-verify's parse of an answer string, its digits grouped by LaTeX spaces joined
    first (:func:`ungrouped`; an empty tuple if it cannot parse it, or ran out of time:
    :func:`timed_out`)."""
    return _reading(answer).forms


def _reading(answer: str) -> _Reading:
    """:func:`_cached_reading`, or no parse where it ran out of time (:func:`timed_out`)."""
    try:
        return _reading_or_raise(answer)
    except TimeoutException:
        return _Reading((), _squeeze(answer), cut=True)


def _reading_or_raise(answer: str) -> _Reading:
    """:func:`_cached_reading`, counting a reading that runs out of time (it raises
    ``TimeoutException``); one that ran out :data:`TIMEOUT_ATTEMPTS` times is no parse from
    then on, for every check of the process (each reads the answer again otherwise: a step
    read one answer nine times)."""
    if _timed_out.get(("parse", answer), 0) >= TIMEOUT_ATTEMPTS:
        return _Reading((), _squeeze(answer), cut=True)
    try:
        return _cached_reading(answer)
    except TimeoutException:
        timed_out("parse", answer)
        raise


@functools.lru_cache(maxsize=8192)
def _cached_reading(answer: str) -> _Reading:
    """The reading of ``answer``, kept unless it ran out of time (a ``TimeoutException``
    is not kept). The parse has :data:`CHECK_TIMEOUT_S`, and so has what follows it: an
    expression too deep or a number too large to compute (:func:`too_deep`,
    :func:`too_large`) is no parse, compared as text; else its key is sympy's text of it,
    which is slow for deep expressions (a continued fraction 16 deep took seconds) and
    asked at every vote."""
    try:
        parsed = tuple(
            parse(
                f"{_BOXED}{{{ungrouped(answer)}}}",
                extraction_config=_LATEX_EXTRACTION,
                parsing_timeout=_timeout_s(),
                raise_on_error=True,
            )
        )
    except Exception:  # noqa: BLE001 - math-verify cannot read it: no parse (a timeout is no Exception)
        return _Reading((), _squeeze(answer))
    return math_verify_timeout(_timeout_s())(_bounded_reading)(parsed, answer)  # after parse's alarm, not inside it


def _bounded_reading(parsed: tuple[Any, ...], answer: str) -> _Reading:
    """The reading of a parse of ``answer`` (see :func:`_cached_reading`); a matrix is
    checked entry by entry."""
    expressions = [
        entry
        for expr in parsed
        for entry in (expr if isinstance(expr, sympy.MatrixBase) else [expr])
        if isinstance(entry, sympy.Basic)
    ]
    if not parsed or any(too_deep(expr) or too_large(expr) or too_costly(expr) for expr in expressions):
        return _Reading((), _squeeze(answer))
    return _Reading(parsed, _written(parsed[0], answer))


MAX_DEPTH = 30
"""The depth of the deepest sympy tree an answer is read as mathematics in; a deeper one
is compared as text. A continued fraction of 9 levels is 28 deep, of 10 levels 31 (sympy
writes and computes one of 10 levels in about 0.05 s, and the time doubles at about every
level past it); a competition's answer is a few deep."""


def too_deep(expr: sympy.Basic) -> bool:
    """Whether ``expr`` is more than :data:`MAX_DEPTH` levels deep.

    >>> too_deep(sympy.sympify("1/(1+1/(1+1/(1+x)))", evaluate=False)), too_deep(sympy.Integer(3))
    (False, False)
    """
    pending = [(expr, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            return True
        pending.extend((arg, depth + 1) for arg in node.args)
    return False


MAX_DIGITS = 100_000
"""Digits of the largest number math-verify is asked to compute (:func:`too_large`)."""


def too_large(expr: sympy.Basic) -> bool:
    """Whether ``expr`` holds a number of more than :data:`MAX_DIGITS` digits (by an upper
    bound of its size, never by computing it): ``9^{9^{9}}`` parses in a moment, but each
    comparison with it computes 9^387420489 until its time limit, 5 s for every answer and
    pair of agents, so a team writing power towers stalled every step for 20 to 100 s. So
    do functions of huge arguments (``\\Gamma(10^{6})``, ``\\sinh(10^{7})``); a number
    whose value cannot be had here counts as too large, and so does an unevaluated sum,
    product, integral or limit (``\\prod_{n=1}^{10^7} n`` costs the whole time limit too,
    with a bound changed each turn to miss the memo: no answer the dataset asks for).

    >>> too_large(sympy.sympify("9**(9**9)", evaluate=False)), too_large(sympy.sympify("10**5000", evaluate=False))
    (True, False)
    >>> too_large(sympy.sympify("2**(2**16)", evaluate=False)), too_large(sympy.sympify("gamma(10**6)", evaluate=False))
    (False, True)
    >>> n = sympy.Symbol("n")
    >>> too_large(sympy.Product(n, (n, 1, 10**7))), too_large(1 + sympy.Sum(1 / n, (n, 1, 3)))
    (True, True)
    """
    try:
        return _log10_bound(expr) > MAX_DIGITS
    except Exception:  # noqa: BLE001 - sympy could not bound it (PrecisionExhausted, ...): not computed either
        return True


_INFINITE = float("inf")


def _log10_bound(expr: sympy.Basic) -> float:
    """An upper bound of log10 |x| over the numbers ``expr`` computes (0 for a symbol)."""
    if isinstance(expr, sympy.Integer):
        return int(expr).bit_length() * 0.30103
    if isinstance(expr, sympy.Rational):
        return max(int(expr.p).bit_length(), int(expr.q).bit_length()) * 0.30103
    if isinstance(expr, sympy.Float):
        return abs(_log10(abs(float(expr)))) if expr else 0.0
    if isinstance(expr, sympy.Pow):
        if not expr.base.is_number:  # (x + 9^{9^9})^2: the larger of the base's numbers and the exponent's
            return max(_log10_bound(expr.base), _log10_bound(expr.exp))
        if expr.base in (sympy.S.Zero, sympy.S.One, sympy.S.NegativeOne):  # 1^e, (-1)^e, 0^e: no size
            return 0.0
        if _log10_bound(expr.exp) > 7:  # an exponent past 10^7 of any other base ((1+10^{-20})^{10^{10}})
            return _INFINITE
        number = numeric_value(expr.base)  # in double precision first: never sympy's evalf
        if number is None and _log10_bound(expr.base) > MAX_DIGITS:  # (\sin(10^{10^{10}}))^2: not computed
            return _INFINITE
        base = abs(number) if number is not None else _sympy_value(expr.base)  # |b^e| = 10^(e log10 |b|), either sign of e
        scale = abs(_log10(base)) if base != _INFINITE else _INFINITE
        return _value(expr.exp) * scale if expr.exp.is_number else _log10_bound(expr.base)
    if isinstance(expr, (ExprWithLimits, sympy.Limit)):  # a sum, product, integral or limit: evaluated, not bounded
        return _INFINITE
    if isinstance(expr, sympy.Function) and expr.args:  # exp, Gamma, a factorial, a binomial: x log10 x at most
        if max(_log10_bound(arg) for arg in expr.args) > 7:
            return _INFINITE
        value = max(_value(arg) if arg.is_number else 0.0 for arg in expr.args)
        return value * max(_log10(value), 1.0)
    sizes = [_log10_bound(arg) for arg in expr.args]
    return sum(sizes) + len(sizes) if sizes else 0.0  # a product's size at most; a sum's below it


def _value(expr: sympy.Basic) -> float:
    """|expr| of a number whose size the caller bounded (:func:`_log10_bound`: sympy's
    ``evalf`` of ``\\sin(10^{10^{10}})`` runs for minutes in C, where no alarm stops it),
    or infinity where it cannot be had: computed in double precision
    (:func:`~deliberation_env.tasks.expression_values.numeric_value`), else by sympy
    (``\\Gamma(\\frac{1}{3})``)."""
    number = numeric_value(expr)
    return _sympy_value(expr) if number is None else abs(number)


def _sympy_value(expr: sympy.Basic) -> float:
    """|expr| computed by sympy (:func:`_value`'s fallback), or infinity where it has none."""
    try:
        value = abs(complex(expr))
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return _INFINITE
    return _INFINITE if cmath.isnan(value) else value  # NaN: no value


def _log10(value: float) -> float:
    """log10 of ``value`` > 0 (0 for 0 and infinities, which bound nothing here)."""
    return cmath.log10(value).real if 0 < value < _INFINITE else 0.0


MAX_EXPANDED_TERMS = 300
"""Terms of the expanded form of the largest polynomial an answer is read as mathematics in
(:func:`too_costly`): sympy's ``simplify`` of ``(a+b+c+d+1)^{9}`` (715 terms) took 1.7 s
against a number, ``(x+y+1)^{61}`` (1,953 terms) 4.7 s, each comparison."""
MAX_TRIG_NESTING = 3
"""Trigonometric and hyperbolic functions nested in one another, at most (:func:`too_costly`):
``simplify`` rewrites each into exponentials, and ``\\cos`` of ``\\cos`` ... 4 deep took 1.3 s
against a number, 5 deep 4.7 s."""
_TRIG_FUNCTIONS = (sympy.functions.elementary.trigonometric.TrigonometricFunction, sympy.functions.elementary.hyperbolic.HyperbolicFunction)


def too_costly(expr: sympy.Basic) -> bool:
    """Whether comparing ``expr`` would cost math-verify seconds though it is neither deep
    nor large (red team 32): a power of a sum whose expansion has more than
    :data:`MAX_EXPANDED_TERMS` terms (``(x+1)^{1000}``, ``(x+y+1)^{61}``; its exponent
    changed each turn, every comparison ran to its time limit, twice, for every answer and
    pair of agents), or trigonometric functions nested more than :data:`MAX_TRIG_NESTING`
    deep (``\\cos(\\cos(\\cos(\\cos(\\cos(2)))))``). Such an answer is compared as text,
    as a power tower is; no competition answer comes near either bound.

    >>> x, y = sympy.symbols("x y")
    >>> too_costly((x + 1) ** 2), too_costly((x + 1) ** 1000), too_costly((x + y + 1) ** 30), too_costly(x**5000)
    (False, True, True, False)
    >>> too_costly(sympy.cos(sympy.sin(x))), too_costly(sympy.cos(sympy.cos(sympy.cos(sympy.cos(sympy.Integer(2))))))
    (False, True)
    """
    return _expanded_terms(expr) > MAX_EXPANDED_TERMS or _trig_nesting(expr) > MAX_TRIG_NESTING


def _expanded_terms(expr: sympy.Basic) -> int:
    """An upper bound of the terms of ``expr`` expanded (a sum's add up, a product's
    multiply, an integer power of t terms gives C(n+t-1, t-1)); past
    :data:`MAX_EXPANDED_TERMS` the count stops growing exactly (only ``> MAX`` matters)."""
    cap = MAX_EXPANDED_TERMS + 1
    if isinstance(expr, sympy.Add):
        return min(cap, sum(_expanded_terms(arg) for arg in expr.args))
    if isinstance(expr, sympy.Mul):
        product = 1
        for arg in expr.args:
            product = min(cap, product * _expanded_terms(arg))
        return product
    if isinstance(expr, sympy.Pow):
        base = _expanded_terms(expr.base)
        exponent = expr.exp
        if base == 1 or not (isinstance(exponent, sympy.Integer) and exponent != 0):
            return max(base, _expanded_terms(exponent))
        power = abs(int(exponent))
        return cap if power >= cap else min(cap, math.comb(power + base - 1, base - 1))
    return max((_expanded_terms(arg) for arg in expr.args if isinstance(arg, sympy.Basic)), default=1)


def _trig_nesting(expr: sympy.Basic) -> int:
    """How deep trigonometric and hyperbolic functions nest in ``expr`` (``\\sin(\\cos x)``: 2)."""
    inner = max((_trig_nesting(arg) for arg in expr.args if isinstance(arg, sympy.Basic)), default=0)
    return inner + isinstance(expr, _TRIG_FUNCTIONS)


TIMEOUT_ATTEMPTS = 2
"""How often a parse or comparison may run out of time before it counts as failed for the
rest of the process. A check cut at its limit by a loaded machine is tried again (once
kept, a right answer stayed wrong for good); one that runs out again is slow by itself,
and checking it at every leave-one-out team would cost :data:`CHECK_TIMEOUT_S` each time."""
_timed_out: dict[tuple[str, ...], int] = {}


def timed_out(*check: str) -> None:
    """Count one more time ``check`` ran out of time (at most 8,192 checks are remembered)."""
    if len(_timed_out) >= 8192:
        _timed_out.clear()
    _timed_out[check] = _timed_out.get(check, 0) + 1


def ungrouped(answer: str) -> str:
    """``answer`` with its thousands grouped by a LaTeX space written plainly: math-verify
    reads ``10\\,000`` as 10 x 000 and ``1\\ 000`` as 1 x 000 (so an honest answer was
    wrong) and ``12\\,345`` as 12 + 345.

    >>> ungrouped(r"10\\,000"), ungrouped(r"1\\,234\\,567.5"), ungrouped(r"3.141\\,59"), ungrouped(r"2\\,3")
    ('10000', '1234567.5', '3.14159', '2\\\\,3')
    >>> ungrouped(r"x^{2}\\,000"), ungrouped("0{,}125"), ungrouped("3{,}14"), ungrouped("1{,}250")
    ('x^{2}\\\\,000', '0.125', '3.14', '1250')
    """
    answer = _EMPTY_SET_NAMES.sub(r"\\emptyset", _DECIMAL_COMMA.sub(".", answer))  # math-verify reads \emptyset alone
    answer = _TEXT_ALIASES.sub(r"\\text", answer)  # and \text{}: \texttt{7} is 7
    return _GROUPED.sub(lambda number: _GROUP_SPACE.sub("", number.group()), answer)


def _timeout_s() -> int | None:
    """The check time limit, where math-verify can enforce it (the main thread)."""
    return CHECK_TIMEOUT_S if threading.current_thread() is threading.main_thread() else None


def equivalent(reference: str, answer: str) -> bool:
    """Whether two answer strings are the same mathematical answer (math-verify). Each
    pair is compared once per process (:func:`_equivalent_in_time`): a team's answer is
    checked again for every leave-one-out team. A comparison cut at its time limit counts
    False and is tried again, up to :data:`TIMEOUT_ATTEMPTS` times.

    >>> equivalent(r"\\frac{1}{2}", "0.5"), equivalent("[1,3)", "(1,3)")
    (True, False)
    """
    if _timed_out.get(("compare", reference, answer), 0) >= TIMEOUT_ATTEMPTS:
        return False
    if other_base(reference, answer):
        return False
    try:
        return _equivalent_in_time(reference, answer)
    except TimeoutException:
        timed_out("compare", reference, answer)
        return False


_BASE = re.compile(r"(?<![\\\w^])[0-9A-Z]*\d[0-9A-Z]*_(\{(?:[^{}]|\{[^{}]*\})*\}|\d+|\w)")
"""A numeral with a subscript, its base (``1011_2``, ``4A_{11}``, ``18_{ 17}``; not ``x_1``,
nor an exponent's, ``x^2_1``)."""
_SUBSCRIPT_MARKUP = re.compile(r"\\[,;:! ]|[\s{}()]")
"""Spaces, braces and parentheses around a base (``_{\\,17}``, ``_{{17}}``, ``_{(17)}``)."""


def bases(text: str) -> frozenset[str]:
    """The bases ``text`` writes its numerals in, as written (markup aside).

    >>> sorted(bases(r"1011_2 + 4A_{ 11} + x_1")), sorted(bases("18_{100}")), sorted(bases("18"))
    (['11', '2'], ['100'], [])
    """
    return frozenset(_SUBSCRIPT_MARKUP.sub("", base) for base in _BASE.findall(text))


def _voted_bases(text: str) -> frozenset[str]:
    """:func:`bases` but base 10, which writes the numeral as it is read: what sets two
    answers' votes apart."""
    return bases(text) - {"10"}


def other_base(reference: str, answer: str) -> bool:
    """Whether ``answer`` writes its numerals in another base than ``reference`` does
    (math-verify drops subscripts: ``10001_3`` was right for ``10001_2``, and ``18_{17}``
    for 18). An answer without a base is read in the reference's (``1011`` for ``1011_2``);
    against a reference without one, only base 10 is none (``18_{10}`` is 18, ``1011_{10}``
    is no ``1011_2``).

    >>> other_base("10001_2", "10001_3"), other_base("18", "18_{17}"), other_base("1011_2", "1011"), other_base("18", "18_{10}")
    (True, True, False, False)
    >>> other_base("1011_2", "1011_{10}"), other_base("18", "18_{100}"), other_base("18", "18_{\\,17}")
    (True, True, True)
    """
    given, wanted = bases(answer), bases(reference)
    if not given:
        return False
    return given != (wanted or frozenset({"10"}))


@functools.lru_cache(maxsize=8192)
def _equivalent_in_time(reference: str, answer: str) -> bool:
    """:func:`equivalent`, kept unless a comparison ran out of time (then it raises
    ``TimeoutException``, which is not kept): each parsed form of the reference against
    each of the answer's, as math-verify's ``verify`` does, an error in one pair counting
    False for it."""
    gold = _cached_reading(reference).forms  # out of time raises (not kept), counted for the pair only:
    target = _reading_or_raise(answer).forms  # a reference cut twice on a loaded machine stays a reference
    if not gold or not target:
        return _squeeze(reference) == _squeeze(answer)
    ran_out = None
    for expected, given in itertools.product(gold, target):
        if values_differ(expected, given):  # no need of sympy's simplify, which can take seconds
            continue
        try:
            if verify(expected, given, timeout_seconds=_timeout_s(), raise_on_error=True):
                return True
        except TimeoutException as error:
            ran_out = error
        except Exception:  # noqa: BLE001, S112 - math-verify could not compare this pair: not equal
            continue
    if ran_out is not None:
        raise ran_out
    return False


_TRIAL_POINTS = (0.5772156649, 1.3247179572)
"""Where :func:`values_differ` values the first symbol of two expressions (each next symbol
at these plus 0.1173 times its place): points no competition answer is special at."""
_VALUE_TOLERANCE = 1e-4
"""The relative difference past which two values differ for :func:`values_differ` (math-verify
rounds to 6 decimals; a looser bound only sends more pairs on to it)."""


_VARIABLE_NAME = re.compile(
    r"(?:[A-Za-z]|alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|rho"
    r"|sigma|tau|upsilon|phi|varphi|chi|psi|omega)(?:_\{?[A-Za-z0-9]+\}?)?",
    re.IGNORECASE,
)
"""A symbol :func:`values_differ` gives a value: a variable (``x``, ``x_1``, ``\\theta``), not
a word or a number math-verify read from ``\\text{}``, which it compares by name."""


def values_differ(first: Any, second: Any) -> bool:
    """Whether two parsed expressions differ in value, so math-verify need not compare them:
    both are plain expressions (not equations, sets, intervals or matrices) with a value
    in double precision (:func:`~deliberation_env.tasks.expression_values.numeric_value`) at
    one of two points of their symbols (variables only: a letter, possibly with an index,
    or a Greek letter's name; C and c alike), and the values there differ by more than
    :data:`_VALUE_TOLERANCE` relative. ``verify`` would run sympy's ``simplify`` on them,
    which took its whole time limit, twice, for ``\\cos((x+1)^{5})`` or a nested cosine
    against a number (red team 32). A pair without values (an unknown function, an
    overflow) or with equal ones goes on to math-verify.

    >>> x = sympy.Symbol("x")
    >>> values_differ(sympy.Integer(3), sympy.cos((x + 1) ** 5)), values_differ(x**2 - 1, (x - 1) * (x + 1))
    (True, False)
    >>> values_differ(sympy.Rational(14, 3), sympy.Float("4.666667")), values_differ(sympy.Integer(3), sympy.Eq(x, 3))
    (False, False)
    """
    if not (isinstance(first, sympy.Expr) and isinstance(second, sympy.Expr)):
        return False
    symbols = first.free_symbols | second.free_symbols
    if not all(_VARIABLE_NAME.fullmatch(str(symbol)) for symbol in symbols):  # \text{7}, \text{Devon}: compared by name
        return False
    names = sorted({str(symbol).lower() for symbol in symbols})  # math-verify reads C and c alike
    for point in _TRIAL_POINTS:
        at = {symbol: point + 0.1173 * names.index(str(symbol).lower()) for symbol in symbols}
        one, other = numeric_value(first, at), numeric_value(second, at)
        if one is not None and other is not None:
            return abs(one - other) > _VALUE_TOLERANCE * max(1.0, abs(one), abs(other))
    return False


def answer_key(answer: str) -> str:
    """A canonical string of an answer: equal for answers that parse to the same expression.

    >>> answer_key(r"\\dfrac{1}{2}") == answer_key("0.5") == answer_key("1/2")
    True
    """
    return _reading(answer).key


def _written(expr: Any, answer: str) -> str:
    """sympy's text of ``expr``, read from ``answer``; ``answer`` squeezed where Python
    refuses to write it (an integer of more than 4,300 digits, ``\binom{16000}{8000}``:
    the answer is then keyed by its own text, and one agent's answer cannot fail a step)."""
    try:
        return str(expr)
    except ValueError:
        return _squeeze(answer)


class _CompetitionMath(SplitsFromSource):
    """Shared behaviour of MATH, AIME and AMC: loading, parsing, checking."""

    name: str
    instructions = MATH_INSTRUCTIONS

    def __init__(self, path: str | Path, scoring: str = "strict", test_fraction: float = TEST_FRACTION) -> None:
        self.scoring = check_scoring(scoring)
        self.path = resolve_source(self.name, path)
        records = load_splits(self.path, lambda where, r: question_key(require(where, r, "problem")), test_fraction)
        located = {  # every split read now: fail here, not mid-episode, on a bad record
            split: [(where, self._problem(where, record, f"{self.name}:{split}-{index}")) for index, (where, record) in enumerate(pairs)]
            for split, pairs in records.items()
        }
        check_unique_ids(located)
        self._problems = self._select(
            {split: tuple(problem for _, problem in pairs) for split, pairs in located.items()}
        )

    def _problem(self, where: str, record: dict[str, Any], default_id: str) -> Problem:
        """One problem from a record (``ValueError`` naming ``where`` if malformed); its id
        is the record's own, else ``default_id``."""
        answer = _squeeze(require_answer(where, record, "answer"))
        return Problem(_problem_id(self.name, where, record, default_id), require(where, record, "problem"), answer)

    def _select(self, splits: dict[str, tuple[Problem, ...]]) -> dict[str, tuple[Problem, ...]]:
        """The problems to keep of each split (all of them; MATH selects levels and types)."""
        return splits

    def parse(self, problem: Problem, text: str) -> str | None:
        """The final answer in ``text`` under the task's ``scoring`` (:func:`stated_answer`
        when strict, but none where the box :func:`offers_alternatives`;
        :func:`extract_answer` when lenient); none where the answer's reading ran out of
        time (the reader could not see what it hides, and the next reading may key it
        otherwise)."""
        if self.scoring != "strict":
            answer = extract_answer(text)
            return None if answer is None or _reading(answer).cut else answer
        answer = stated_answer(text)
        if answer is None or _reading(answer).cut:
            return None
        return None if offers_alternatives(answer, problem.answer) else answer

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether math-verify finds ``decision`` equal to the reference."""
        return decision is not None and equivalent(problem.answer, decision)

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Answers that parse to the same expression, in the same base, agree (see
        :func:`answer_key`, which drops a numeral's base, and :func:`bases`)."""
        return answer_key(decision) + "".join(f"_{{{base}}}" for base in sorted(_voted_bases(decision)))

    def same_answer(self, problem: Problem, first: str, second: str) -> bool:
        """Whether two answers are one: equal keys, or equal for math-verify (``x = 7`` and
        ``7``, ``\\frac34`` and ``0.75``), which the keys alone split
        (:func:`~deliberation_env.tasks.base.same_answer`)."""
        if _voted_bases(first) != _voted_bases(second):  # 1011_2 is no 1011_3, nor 1011 (read as the reference)
            return False
        return answer_key(first) == answer_key(second) or equivalent(first, second)


def _problem_id(task: str, where: str, record: dict[str, Any], default: str) -> str:
    """The record's own id (``unique_id`` or ``id``: a string or an integer) as
    ``task:<id>`` if it has one, else ``default`` (``task:<split>-<index in split>``)."""
    for field in ("unique_id", "id"):
        value = record.get(field)
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{task}:{value}"
        if value is not None:
            return f"{task}:{require(where, record, field)}"
    return default


class MathTask(_CompetitionMath):
    """MATH (Hendrycks et al., 2021) from MATH-format JSONL.

    Args:
        path: A directory with ``train.jsonl`` and ``test.jsonl``, one JSONL file
            (hash-split by problem text), ``"hf:<dataset>[:<config>]"`` or ``"sample"``.
        levels: Keep only these levels (e.g. ``(4, 5)`` or ``("Level 5",)``); ``None``: all.
        types: Keep only these subjects (e.g. ``("Algebra",)``); ``None``: all.
        scoring: ``"strict"`` (only ``\\boxed{}`` answers count) or ``"lenient"`` (see the
            module docstring).
        test_fraction: The share of a single file's problems placed in ``test``.

    Raises:
        FileNotFoundError: If ``path`` does not exist (saying what it accepts).
        ValueError: On a malformed line (naming ``path:line``), e.g. a solution without
            ``\\boxed{}``, a problem id used twice, or ``levels``/``types`` that select
            a level or subject the data does not have.
    """

    name = "math"

    def __init__(
        self,
        path: str | Path,
        levels: Iterable[int | str] | None = None,
        types: Iterable[str] | None = None,
        scoring: str = "strict",
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        chosen_levels = selection("levels", levels)
        self.levels = None if chosen_levels is None else {_level(level) for level in chosen_levels}
        self.types = selection("types", types)
        super().__init__(path, scoring, test_fraction)

    def _problem(self, where: str, record: dict[str, Any], default_id: str) -> Problem:
        if record.get("answer") is not None:
            answer = _squeeze(require_answer(where, record, "answer"))
        else:
            answer = last_boxed(require(where, record, "solution"))
        if not answer:
            raise ValueError(
                f"{where}: the solution has no \\boxed{{...}} answer (and no 'answer' field)"
            )
        meta = {key: require(where, record, key) for key in ("solution",) if record.get(key) is not None}
        for field in ("type", "subject"):  # MATH-500 calls the type "subject"
            if record.get(field) is not None:
                meta["type"] = require(where, record, field)
                break
        if record.get("level") is not None:
            meta["level"] = _level(_level_field(where, record))
        return Problem(
            _problem_id(self.name, where, record, default_id), require(where, record, "problem"), answer, meta
        )

    def _select(self, splits: dict[str, tuple[Problem, ...]]) -> dict[str, tuple[Problem, ...]]:
        """Keep the problems of the chosen levels and types (``ValueError`` if one is absent)."""
        everything = [problem for problems in splits.values() for problem in problems]
        for argument, wanted, field in (("levels", self.levels, "level"), ("types", self.types, "type")):
            found = {problem.meta[field] for problem in everything if field in problem.meta}
            if wanted is not None and not wanted <= found:
                raise ValueError(
                    f"{argument}: {', '.join(sorted(wanted - found))} not found in {self.path}; "
                    f"it has: {', '.join(sorted(found)) or f'no {field!r} field'}"
                )
        return {split: tuple(filter(self._chosen, problems)) for split, problems in splits.items()}

    def _chosen(self, problem: Problem) -> bool:
        return (self.levels is None or problem.meta.get("level") in self.levels) and (
            self.types is None or problem.meta.get("type") in self.types
        )


def _level(level: int | str) -> str:
    """``5``, ``"5"`` and ``"Level 5"`` all become ``"Level 5"``."""
    if isinstance(level, bool) or not isinstance(level, int | str):
        raise TypeError(f"levels must hold integers or strings like 'Level 5', got {level!r}")
    text = str(level).strip()
    return text if text.startswith("Level") else f"Level {text}"


def _level_field(where: str, record: dict[str, Any]) -> int | str:
    """The record's ``level``: an integer or a string (``ValueError`` naming ``where`` otherwise)."""
    level = record["level"]
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    return require(where, record, "level")


class AIMETask(_CompetitionMath):
    """AIME problems (integer answers 0-999) from JSONL with ``problem`` and ``answer``.

    Args:
        path: A directory with ``train.jsonl`` and ``test.jsonl``, one JSONL file
            (hash-split), or ``"hf:<dataset>[:<config>]"``.
        scoring: ``"strict"`` or ``"lenient"`` (see the module docstring).
        test_fraction: The share of a single file's problems placed in ``test``.
    """

    name = "aime"


class AMCTask(_CompetitionMath):
    """AMC problems from JSONL with ``problem`` and ``answer`` (a number or expression).

    Args:
        path: A directory with ``train.jsonl`` and ``test.jsonl``, one JSONL file
            (hash-split), or ``"hf:<dataset>[:<config>]"``.
        scoring: ``"strict"`` or ``"lenient"`` (see the module docstring).
        test_fraction: The share of a single file's problems placed in ``test``.
    """

    name = "amc"
