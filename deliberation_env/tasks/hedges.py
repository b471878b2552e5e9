"""Lines after a final answer that offer another: shared by the strict readers.

A text that states its final answer in the asked form and then, on a later line, offers
another value has hedged, and strict scoring reads no answer from it
(:func:`hedges_after`). A later line offers a value when

- a part of it is that value alone, after words of doubt, of taking back or of filler
  ("(or 11).", "Or maybe 11.", "But it might be 19.", "Wait, that's wrong: it's 19.",
  "Actually no, C."), and the line doubts or takes back (:data:`DOUBT_WORDS`, "or",
  "wait", "wrong", ``?``, ...);
- it calls the value right too ("19 is also correct.", "Though C is possible.");
- or it is nothing but values ("C", "18 or 19.", "(19?)").

What counts as one value is the reader's (``value_of``: a number, a letter, a LaTeX
expression), and so is whether it differs from the answer (``differs``: "Or 1/2." after
"The answer is 0.5." offers nothing new); a line that restates the answer in another form
or unit ("Or, in cents, 1800.") offers none. A line that mentions numbers in passing, an
explanation or a check ("Alternatively, we can compute it as 16 - 7 = 9 eggs and 9 x $2 =
$18.", "Note: she keeps 7 of the 16 eggs.", "Option A might seem right, but ..."), offers
no value, so it is no hedge.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

DOUBT_WORDS = (
    "maybe", "perhaps", "possibly", "probably", "not sure", "unsure", "could", "might", "either", "else", "rather",
)  # fmt: skip
"""Words of doubt."""
NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty",
    "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
)  # fmt: skip
"""Numbers in words: a second value a digit-reading check would not see."""
WORD_VALUES = {word: str(value) for value, word in enumerate(NUMBER_WORDS[:21])} | {
    word: str(10 * tens) for tens, word in enumerate(NUMBER_WORDS[21:28], start=3)
}
"""The value of a number written as one word ("eleven": "11"), for the readers' ``value_of``."""

_DOUBTS = re.compile(
    rf"\?|\b(?:or|alternatively|otherwise|may|{'|'.join(DOUBT_WORDS)}"
    r"|alternately|equivalently|yet|if|unless|wait|wrong|mistake|oops|incorrect|correction|actually|no)\b",
    re.IGNORECASE,
)
"""A line that doubts or takes back: words of doubt, "or", "wait", "wrong", ``?``, ..."""
_LIST_MARKER = re.compile(r"\s*+(?:\d{1,3}[.)]|[-*+•>#]++)\s++")
_PARTS = re.compile(r"[,;:?!|—–]++")
"""What separates the parts of a line ("Wait, that's wrong: it's 19.")."""
_FILLER = re.compile(
    r"(?:[\s*_`\"'“”‘’.(\[{}$]++|\\(?:text|textbf|mathrm|mbox)\{|\\[(\[]"
    r"|\b(?:or|maybe|perhaps|possibly|probably|alternatively|alternately|equivalently|otherwise|else|rather|either"
    r"|even|but|yet|though|although|if|unless|hmm|well|so|then|actually|no|wait|oops|correction|it's|it|is|could|might|may"
    r"|would|be|also|the|final|answer|option|choice|instead|i think|i guess|likely)\b)*+",
    re.IGNORECASE,
)
"""Words and markup before a value offered ("but it might be", "or maybe", "**")."""
_CLOSING_MARKS = " \t*_`\"'“”‘’.,!?)]}$\\"
_TRAILING_WORDS = ("too", "as well", "instead", "then", "though", "maybe", "perhaps")
"""Words after a value offered ("19 too", "C instead")."""
_CALLED_RIGHT = re.compile(
    r"(.+?)\s++(?:is|are|could|might|may|would|seems)(?:\s++(?:also|equally|be|too|likely|perhaps|maybe|possibly))*+\s++"
    r"(?:correct|right|possible|plausible|valid|true|acceptable|fine|an? (?:correct )?answer|the (?:correct )?answer"
    r"|an option)\b",
    re.IGNORECASE,
)
"""A part that calls a value right ("19 is also correct", "C could also be the answer")."""
_EMPHASIS = re.compile(r"(?<![\\\w])_++|_++(?![\w{])")
"""Underscores of emphasis (``_Or maybe 19._``), not a subscript's (``x_1``)."""
_RESTATED = re.compile(
    r"\b(?:as an?|in)\s++(?:\w++\s++){0,2}?(?:fraction|decimal|mixed number|percent|percentage|words|form|terms"
    r"|notation|cents|dollars|units|degrees|radians|seconds|minutes|hours|days|meters|centimeters|feet|inches)\b",
    re.IGNORECASE,
)
"""A line that restates the answer in another form or unit ("Or, in cents, 1800.", "Or, as a
mixed number, $4\\frac{2}{3}$."): no hedge."""
_OR = re.compile(r"\s++or\s++", re.IGNORECASE)
MAX_VALUES = 64
"""Parts of the lines after an answer read as values at most; past them the text has hedged
(no honest answer lists so many, and reading each may cost a math-verify parse)."""


def hedges_after(
    rest: str,
    answer: str,
    value_of: Callable[[str], str | None],
    differs: Callable[[str, str], bool] = operator.ne,
) -> bool:
    """Whether ``rest``, the text after a final answer's line, offers another value on a
    later line (see the module docstring).

    Args:
        rest: The text after the final answer's line.
        answer: The answer the text states, as the reader holds it.
        value_of: The value a fragment is, when it is one value and nothing else (markup
            and closing punctuation aside), else ``None``.
        differs: Whether a value is another answer than ``answer`` (``differs(answer, value)``).

    >>> def number(fragment):
    ...     fragment = fragment.strip(" $.")
    ...     return fragment if fragment.isdigit() else None
    >>> [hedges_after(after, "12", number) for after in ["\\n(or 11).", "\\nWait, that's wrong: it's 13.", "\\n11?"]]
    [True, True, True]
    >>> hedges_after("\\nAlternatively, 16 - 4 = 12 apples, as 4 + 8 = 12.", "12", number)
    False
    """
    read = 0
    for line in _EMPHASIS.sub(" ", rest).split("\n"):
        marker = _LIST_MARKER.match(line)
        line = line[marker.end() :] if marker else line
        if not line.strip() or _RESTATED.search(line):
            continue
        doubted = _DOUBTS.search(line) is not None
        offered: list[str] = []
        listed = [_core(part) for part in _OR.split(_strip_end(line))]
        if len(listed) > 1 or not doubted:  # the line may be nothing but values ("18 or 19.", "C")
            offered += listed
        parts = [part for part in _PARTS.split(line) if any(char.isalnum() for char in part)]
        after_doubt = False  # the part before was a word of doubt alone ("Or, 19", "Alternatively: C")
        for index, part in enumerate(parts):
            core = _core(part)
            called_right = _CALLED_RIGHT.fullmatch(core)
            doubting = _DOUBTS.search(part) is not None
            if called_right:
                offered.append(_core(called_right.group(1)))
            elif doubted and (doubting or after_doubt or index == len(parts) - 1):
                offered.append(core)  # a value right after doubt, or ending the line
            after_doubt = doubting and not core
        values = []
        for fragment in filter(None, offered):
            read += 1
            if read > MAX_VALUES:
                return True
            values.append(value_of(fragment))
        if len(listed) > 1 or not doubted:
            alone = values[: len(listed)]  # the line as a list of values: all of them values
            if all(value is not None for value in alone) and any(differs(answer, value) for value in alone):
                return True
            values = values[len(listed) :]
        if any(value is not None and differs(answer, value) for value in values):
            return True
    return False


def _core(fragment: str) -> str:
    """``fragment`` without the filler words and markup around a value."""
    return _strip_end(fragment[_FILLER.match(fragment).end() :])


def _strip_end(text: str) -> str:
    """``text`` without closing marks and :data:`_TRAILING_WORDS` at its end (a few)."""
    for _ in range(4):
        text = text.rstrip(_CLOSING_MARKS)
        lowered = text.lower()
        word = next((w for w in _TRAILING_WORDS if lowered.endswith(w) and not lowered[: -len(w)][-1:].isalnum()), None)
        if word is None:
            return text
        text = text[: -len(word)]
    return text.rstrip(_CLOSING_MARKS)
