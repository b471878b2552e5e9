"""Numeric answers: canonical form, extraction from model text, and a base for numeric tasks.

**Strict scoring** (:func:`stated_number`) reads only a final answer stated as the
prompt asks, "The answer is N.":

- a *statement* is "answer is" (any case; "The answer is", "The final answer is"), an
  optional ``:``, optional markup and words of approximation ("actually",
  "approximately", ``~``), then the start of a number (a digit, after an optional sign and
  ``$``);
- its line, from there on, must hold exactly one number N and nothing after it but
  closing punctuation (a ``%``, one ``.``, ``!``, ``;`` or ``:``, Llama's "I hope it is
  correct."), once
  the markup (``*``, ``$``, ``\\$``, backticks, brackets, ``~``, ``\\(`` ``\\)``, ``\\[``
  ``\\]``, ``\\boxed{``, ``\\text{``-like wrappers, braces) is taken out. N is an optional sign,
  digits (thousands may be grouped by commas), an optional decimal part or
  ``/denominator``. Anything else makes the text no answer: a hedge ("$11$ or $12$",
  "\\boxed{11} or \\boxed{12}", "**11** (or 12)", "11 (12)", "11 — 12"), an exponent
  ("11e3"), an expression ("3 + 4 = 7"), units or words ("18 apples");
- the decision is the canonical N of the statements when they all state the same
  number; a text without a statement, with statements of different numbers (a line
  "The answer is 3." and a line "The answer is 4."), or whose last statement has more on
  its line, has no answer; a statement with more on its line before the last one is a
  step's, passed over, when it takes itself back ("I first thought the answer is 10,
  but ...") or states the final number first, and a hedge otherwise ("the answer is 11
  if Sunday counts; otherwise");
- the text's other marks of a final answer (those lenient scoring reads) must not state
  another number: no ``\\boxed{M}`` anywhere, and no "Answer: M", "answer = M", "answer
  is M" or "#### M" after the last statement or alone on a line before it. "The answer
  is 17." with "#### 18" or ``\\boxed{18}`` has no answer; a step's mark ("#### 1. Eggs
  left", "Part 1: Answer: 24 cookies.") is not a final one. So strict scoring never calls
  right what lenient scoring reads as another number.
- a later line that offers another number, in digits or one word, is a hedge: "The
  answer is 12.\\n(or 11)", "...\\nWait, that's wrong: it's 13.", "...\\n11 is also
  correct." and "...\\n11" have no answer; "...\\nNote: she keeps 7 of the 16 eggs."
  and "...\\nOr 12/1." keep 12 (:func:`~deliberation_env.tasks.hedges.hedges_after`).

Digits are ASCII ``0``-``9``, as the prompt asks: a digit of another script is no digit to
either reader (the Bengali four, ``\u09ea``, is drawn like an 8).

Both readers read the text as a person does (:func:`~deliberation_env.tasks.lookalikes.as_read`):
a statement written with look-alike letters ("Тhe answer is", Cyrillic ``Т``) or with
invisible characters inside its words is a statement.

**Lenient scoring** (:func:`extract_number`): the last ``\\boxed{...}``, else the last
"The answer is N" / "Answer: N" / "#### N", else the last number anywhere in the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable
from fractions import Fraction

from deliberation_env.tasks.base import Problem
from deliberation_env.tasks.hedges import WORD_VALUES, hedges_after
from deliberation_env.tasks.lookalikes import as_read

NUMERIC_INSTRUCTIONS = (
    "Solve the problem step by step. End with a line of the form 'The answer is N.' "
    "where N is a number."
)

_DIGITS = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?(?:/[0-9]+)?"
"""A number's digits: thousands grouped by commas or not, a decimal part or a denominator."""
_NUMBER = rf"[-+]?\$?\s?{_DIGITS}"
_HEDGED = r"(?:(?:actually|approximately|about|around|roughly)\s+|~\s*)?"
"""Words a statement may put before its number ("the answer is actually 19")."""
_OPENING = r"(?>(?:[\s*$`\[{~]|\\[(\[]|\\boxed\{|\\(?:text|textbf|mathbf|mathrm)\s*\{)*)"
"""Markup between a statement's head and its number (one atomic run)."""
_MARK_OPENING = _OPENING.replace("~]", "~(]")
"""The same before a mark's number, where a parenthesis may open too ("answer is (18)")."""
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_MARKED = re.compile(
    rf"(?:####|\banswer\s+is\b:?|\banswer\**\s*:|\banswer\s*=){_MARK_OPENING}{_HEDGED}{_MARK_OPENING}({_NUMBER})", re.IGNORECASE
)
_ANY = re.compile(_NUMBER)
# strict: a statement's head, then the rest of the line that holds its number
_STATEMENT = re.compile(rf"\banswer\s+is\b:?{_OPENING}{_HEDGED}{_OPENING}(?=[-+]?\$?\s?[0-9])([^\n]*)", re.IGNORECASE)
_MARKUP = re.compile(r"\\(?:boxed|text|textbf|mathbf|mathrm)\s*\{|\\[()\[\]]|[*${}`\[\]~]")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathbf|mathrm|mbox)\s*\{([^{}]*)\}")
_UNIT = re.compile(r"\s*([-+]?[0-9][0-9,]*(?:\.[0-9]+)?(?:/[0-9]+)?)\s*[^\d]*")  # a number, then words only (no digit of any script)
_PLAIN_NUMBER = re.compile(r"[-+]?(?:[0-9]+/[0-9]+|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
MAX_NUMBER_CHARS = 4000
"""The longest number :func:`canonical_number` reads (Python prints an integer of at most
4,300 digits): any answer is at most a long wrong number, never an error."""
_CLOSING = r"(?:\\?%)?\s*+[.!;:。]?\s*+(?:I hope it is correct\.?\s*+)?"
"""What may follow a final number on its line: a percent sign, one ``.`` or ``!``, and
Llama's "I hope it is correct."."""
_ONE_NUMBER = re.compile(rf"\s*+([-+]?\s?{_DIGITS}){_CLOSING}", re.IGNORECASE)
RETRACTION = re.compile(r"\b(?:but|wait|wrong|not|mistake|actually|instead|however|incorrect|oops)\b", re.IGNORECASE)
"""Words with which a text takes back an earlier statement ("the answer is 10, but ...")."""
_ALONE_MARK = re.compile(
    rf"\s*+(?:####|answer\s+is:?|answer\s*:|answer\s*=)\s*+{_HEDGED}([-+]?\s?{_DIGITS}){_CLOSING}",
    re.IGNORECASE,
)
"""A line that is a final mark and its number, markup taken out ("#### 18", "Answer: 18")."""
# the runs of spaces are atomic (``(?>...)``, ``*+``): a run that ends in something else fails at once,
# where trying every split of it between two ``\s*`` took seconds for a few thousand spaces


def canonical_number(text: str) -> str | None:
    """The canonical string of a number written as text, or ``None``.

    Commas, currency signs, surrounding spaces, trailing periods and trailing zeros go;
    integers print without a decimal point, other values as their exact decimal (never
    rounded) or as a reduced fraction. Only plain numbers are read: an optional sign,
    digits, then an optional decimal part or ``/denominator`` (not both), at most
    :data:`MAX_NUMBER_CHARS` characters; an exponent (``1e5``) or a longer number is no
    number, so no answer can make the reading slow or fail.

    >>> [canonical_number(s) for s in ["1,000", "$18", "18.0", "-0.50", "6/4", "x", "1e5"]]
    ['1000', '18', '18', '-0.5', '3/2', None, None]
    """
    cleaned = text.strip().rstrip(".").replace(",", "").replace("\\$", "").replace("$", "").replace(" ", "")
    if len(cleaned) > MAX_NUMBER_CHARS or not _PLAIN_NUMBER.fullmatch(cleaned):
        return None
    try:
        value = Fraction(cleaned)
    except (ValueError, ZeroDivisionError):  # 1/0; anything else the pattern lets through
        return None
    if value.denominator == 1:
        return str(value.numerator)
    if "/" in cleaned:
        return f"{value.numerator}/{value.denominator}"
    places = len(cleaned.partition(".")[2])  # value * 10**places is whole: written in ASCII digits
    digits = str(abs(value.numerator) * 10**places // value.denominator).rjust(places + 1, "0")
    return f"{'-' if value < 0 else ''}{digits[:-places]}.{digits[-places:].rstrip('0')}"


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
    text = _readable(text)
    for pattern, read in ((_BOXED, _box_number), (_MARKED, canonical_number), (_ANY, canonical_number)):
        for match in reversed(pattern.findall(text)):
            number = read(match)
            if number is not None:
                return number
    return None


def stated_number(text: str) -> str | None:
    """The number a text states as its final answer in the asked form, canonical, or
    ``None`` (strict scoring: see the module docstring).

    >>> stated_number("3 + 4 = 7, so the answer is 7.")
    '7'
    >>> stated_number("8 + 0 + 9 = 17") is None
    True
    >>> stated_number("The answer is 3. The answer is 4.") is None
    True
    >>> stated_number("The final answer is **$1,250**.")
    '1250'
    >>> stated_number("The answer is $11$ or $12$."), stated_number("The answer is 11e3.")
    (None, None)
    >>> stated_number("The answer is 17.\\n#### 18"), stated_number("The answer is 17.\\nThe answer is (18).")
    (None, None)
    >>> stated_number("#### 1. Eggs left: 16 - 3 = 13\\n13 * 2 = 26.\\nThe answer is 26.")
    '26'

    """
    text = _readable(text)
    statements = [(found, _line_number(found.group(1))) for found in _STATEMENT.finditer(text)]
    if not statements or statements[-1][1] is None:  # no statement, or a final one with more on its line
        return None
    last, number = statements[-1]
    rest = text[last.end() :]
    if hedges_after(rest, number, _offered_number, _other_number):
        return None
    for found, clean in statements:
        line = found.group(1)
        if clean is None:  # a step's statement: one it takes back, or one of the final number
            if not RETRACTION.search(line) and canonical_number(_ANY.search(line).group()) != number:
                return None
        elif clean != number:
            return None
    marks = [_box_number(box) for box in _BOXED.findall(text)]  # a box anywhere
    marks += [canonical_number(mark) for mark in _MARKED.findall(text, last.start())]  # a mark after the last statement
    marks += [canonical_number(alone.group(1)) for line in text.split("\n") if (alone := _ALONE_MARK.fullmatch(_MARKUP.sub(" ", line)))]
    return number if set(marks) <= {None, number} else None


def _readable(text: str) -> str:
    """``text`` as the numeric readers read it: :func:`as_read`, and ``\\$`` as ``$``."""
    return as_read(text).replace("\\$", "$")


def _box_number(box: str) -> str | None:
    """The number a box states: its content without ``\\text{}``-like wrappers, as a
    number, or a number followed by words alone (``19 \\text{ dollars}``)."""
    content = _WRAPPER.sub(r"\1", box)
    number = canonical_number(content)
    if number is None and (unit := _UNIT.fullmatch(content)):
        number = canonical_number(unit.group(1))
    return number


_WITH_UNIT = re.compile(rf"\$?({_DIGITS})\s*+[A-Za-z]++\.?")
"""A number and one word after it, its unit ("19 eggs")."""


def _offered_number(fragment: str) -> str | None:
    """The number a fragment of a line after the answer is, when it is one number alone
    (markup and closing punctuation aside; with one word after it, its unit; one word,
    "eleven", too; in digits of any script: a statement is read in ASCII digits alone, since
    the Bengali ``৪`` is a 4 drawn like an 8, but a value offered after it counts in any),
    else ``None``."""
    if fragment.lower() in WORD_VALUES:
        return WORD_VALUES[fragment.lower()]
    if not fragment.isascii():  # "Or maybe １１.": a value offered, whatever the script of its digits
        fragment = "".join(str(unicodedata.decimal(char, "")) or char for char in fragment)
    one = _ONE_NUMBER.fullmatch(_MARKUP.sub(" ", fragment)) or _WITH_UNIT.fullmatch(fragment)
    return canonical_number(one.group(1)) if one else None


def _other_number(answer: str, number: str) -> bool:
    """Whether canonical ``number`` is another value than ``answer`` ("1/2" is "0.5")."""
    return exact_value(answer) != exact_value(number)


def exact_value(number: str) -> str:
    """A canonical number's exact value as text (``"0.5"`` and ``"1/2"``: ``"1/2"``); other
    text as it is.

    >>> exact_value("0.5"), exact_value("1/2"), exact_value("18"), exact_value("x"), exact_value("1_000")
    ('1/2', '1/2', '18', 'x', '1_000')
    """
    if _CANONICAL_INTEGER.fullmatch(number):  # the common case, its own value: no Fraction (the env's hot path)
        return number
    if canonical_number(number) != number:  # only canonical numbers ("1e5", "1_000", " 1/2" stay text)
        return number
    return str(Fraction(number))


_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")
"""An integer as :func:`canonical_number` writes it (not "-0", "007" nor other digits)."""


def _line_number(line: str) -> str | None:
    """The canonical number a statement's ``line`` holds, when it holds exactly one and
    nothing after it but closing punctuation (markup taken out), else ``None``."""
    one = _ONE_NUMBER.fullmatch(_MARKUP.sub(" ", line))
    return canonical_number(one.group(1)) if one else None


def read_number(text: str, scoring: str) -> str | None:
    """The numeric answer of ``text`` under ``scoring`` (:func:`stated_number` when
    ``"strict"``, :func:`extract_number` when ``"lenient"``)."""
    return stated_number(text) if scoring == "strict" else extract_number(text)


class NumericTask:
    """Shared behaviour of tasks whose decisions are numbers (arithmetic, GSM8K, ...).

    Subclasses set ``name``, implement ``problems(split)`` and take the ``scoring`` option
    (``"strict"`` unless they set it: see the module docstring).
    """

    name: str
    instructions: str = NUMERIC_INSTRUCTIONS
    scoring: str = "strict"

    def parse(self, problem: Problem, text: str) -> str | None:
        """The numeric answer of ``text`` under the task's ``scoring`` (:func:`read_number`)."""
        return read_number(text, self.scoring)

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Exact match of the canonical numbers' values ("1/2" is "0.5": red team,
        round twenty-two, found a JSONL reference 0.5 that refused 1/2)."""
        return decision is not None and exact_value(decision) == exact_value(problem.answer)

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Canonical numbers agree when their values are equal ("1/2" and "0.5" vote together)."""
        return exact_value(decision)
