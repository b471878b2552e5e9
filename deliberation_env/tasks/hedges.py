"""Words with which a text doubts its answer or offers another: shared by the strict readers.

A text that states its final answer in the asked form and then, on a later line, doubts
it and offers another value ("The answer is 12.\\n(or 11)", "\\\\boxed{19}\\nor maybe
20", "Answer: B\\nOr possibly C.") has hedged: strict scoring reads no answer from it
(:func:`doubts_after`): a later line that opens with doubt, or says "also correct", and
offers another value. A note
after the answer ("Note: she keeps 7 of the 16 eggs.", "Option A might seem right, but
...") or doubt without another value ("Or so I think.") is no hedge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

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

_OPENS_WITH_DOUBT = re.compile(
    rf"^[^\w\n]*+(?:or|alternatively|otherwise|{'|'.join(DOUBT_WORDS)})\b[^\n]*", re.IGNORECASE | re.MULTILINE
)
"""A line that opens with doubt: "or", "alternatively", "otherwise" or a word of doubt, after
markup or punctuation only ("(or 11).", "**Maybe C**")."""
_ALSO_RIGHT = re.compile(r"^[^\n]*?\balso\s+(?:be\s+)?(?:correct|right|possible|valid|true|acceptable|works?)\b[^\n]*", re.IGNORECASE | re.MULTILINE)
"""A line that calls something else right too ("Option C is also correct.", "11 could also
be right")."""
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(word for word in NUMBER_WORDS if word != 'one')})\b", re.IGNORECASE)
"""A number in words but "one" (a pronoun too: "or one could check ...")."""


def doubts_after(rest: str, other_values: Callable[[str], Iterable[str]]) -> bool:
    """Whether the text after a final answer's line, ``rest``, hedges: a line of it opens
    with doubt or calls something "also correct", and offers another value, one of ``other_values(line)`` (the values the
    reader finds in it that differ from the answer) or a number in words. A line that only
    discusses ("Option A might seem right, but ...", "Why not 13? Because ...") is no hedge.

    >>> differ = lambda line: [n for n in line.split() if n.strip("().").isdigit() and n.strip("().") != "12"]
    >>> doubts_after("\\n(or 11).", differ), doubts_after("\\nOr maybe eleven.", differ)
    (True, True)
    >>> doubts_after("\\nNote: she keeps 7 of the 16 eggs.", differ), doubts_after("\\nOr so I think.", differ)
    (False, False)
    """
    doubting = "\n".join(_OPENS_WITH_DOUBT.findall(rest) + _ALSO_RIGHT.findall(rest))
    return bool(doubting) and (any(other_values(doubting)) or bool(_NUMBER_WORD.search(doubting)))
