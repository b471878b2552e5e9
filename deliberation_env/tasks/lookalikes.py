"""Text as a reader sees it: letters that look Latin read as Latin, invisible characters gone.

The answer readers look for an English head ("The answer is", "Answer:") and a number or
an option letter. A text can write a head that a person reads but a pattern misses: a
Cyrillic ``Т`` or ``А`` in "Тhe answer is", a zero-width space inside "ans\u200bwer", a
full-width "ａｎｓｗｅｒ". A second statement hidden that way is a hedge the reader would
not see, so the numeric and option-letter readers read :func:`as_read` of a text instead.
"""

from __future__ import annotations

import unicodedata

_CONFUSABLES = dict(
    zip(
        "аеһіјӏорԛѕԝхусгАВСЕНІЈКМОРЅТХҮԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹαιονυɑᎪᏴᏟᎠᎬᎻᎫᏦᎷᏢᏚᎢᏔꓮꓐꓚꓓꓰꓧꓲꓗꓟꓠꓳꓑꓢꓔꓪ",
        "aehijlopqswxycrABCEHIJKMOPSTXYWABEZHIKMNOPTYXCaiovuaABCDEHJKMPSTWABCDEHIKMNOPSTX",
        strict=True,
    )
)
"""Letters of other scripts drawn like a Latin one (from Unicode's confusables: Cyrillic,
Greek, Latin alpha, Cherokee and Lisu capitals), chosen for the readers' heads and the
option letters."""
_INVISIBLE = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff")
"""Characters drawn as nothing: soft hyphen, zero-width spaces and joiners, invisible
operators, the byte-order mark. Bidirectional controls are not among them: they reorder
what is drawn ("\u202e81" shows 18), so a text holding one is read with it, and no number
or head is read across it."""
_MINUS = frozenset("\u2212\ufe63\uff0d")
"""Minus signs drawn as ``-`` (not the dashes, which also separate: "11 — 12")."""
_TABLE_LIMIT = 1 << 16
"""Code points :data:`_AS_READ` remembers at most (a text of every code point would
otherwise grow it by a hundred megabytes)."""


class _AsRead(dict[int, str | None]):
    """``str.translate``'s table of :func:`as_read`, filled per code point as met."""

    def __missing__(self, code: int) -> str | None:
        char = chr(code)
        folded = unicodedata.normalize("NFKC", char)
        if char in _CONFUSABLES:
            read: str | None = _CONFUSABLES[char]
        elif char in _INVISIBLE:
            read = None
        elif 0x2160 <= code <= 0x217F and len(folded) == 1:  # Roman numerals drawn as letters: Ⅽ, ⅽ
            read = folded
        elif char in _MINUS:
            read = "-"
        elif 0xFF01 <= code <= 0xFF5E and not char.isdigit():  # full-width punctuation: ＃, ：
            read = folded
        elif unicodedata.category(char).startswith("L") and len(folded) == 1 and folded.isascii():
            read = folded  # full-width and mathematical letters: ａ, 𝐚
        else:
            read = char
        if len(self) < _TABLE_LIMIT:
            self[code] = read
        return read


_AS_READ = _AsRead()


def as_read(text: str) -> str:
    """``text`` with look-alike letters as their Latin letter, full-width punctuation as
    ASCII, minus signs as ``-`` and invisible characters removed; digits and everything
    else unchanged.

    >>> as_read("Тhe ans\\u200bwer is 7"), as_read("ａｎｓｗｅｒ: Ｂ")
    ('The answer is 7', 'answer: B')
    >>> as_read("x² = ４")  # digits are left alone
    'x² = ４'
    """
    return text if text.isascii() else text.translate(_AS_READ)
