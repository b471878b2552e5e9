"""Lines after a final answer that offer another: shared by the strict readers.

A text that states its final answer in the asked form and then, on a later line, offers
another value has hedged, and strict scoring reads no answer from it
(:func:`hedges_after`). A later line offers a value when

- a part of it is that value alone, after words of doubt, of taking back or of filler
  ("(or 11).", "Or maybe 11.", "But it might be 19.", "Wait, that's wrong: it's 19.",
  "Actually no, C."), and the line doubts or takes back (:data:`DOUBT_WORDS`, "or",
  "wait", "wrong", ``?``, ...);
- it calls the value right too ("19 is also correct.", "Though C is possible.", "11 would be
  my other guess."), names it another answer ("Another possible answer is 11."), or takes
  the answer back for it ("Not 12 but 11");
- or it is nothing but values ("C", "18 or 19.", "(19?)", "12, 11", "B/C", "both B and C",
  "Therefore 11."), also after a label that offers
  ("Possible answers: 12, 11.", "Edit: 11", "Second guess: 11"; "P.S. 11", "Revised 11",
  "Vote: 11", "I pick 11", "Fallback 11", "Alt 11" without a colon), a mark ("=> 11", "— 11", "✓ 11", "11…", a
  table's one cell "| 11 |") or words that call it one's answer ("11 is my answer.", "11,
  actually.", "C it is.").

A value offered is read as it is drawn: "Or «19»", "Or ⑲", "Or <D>" and "Or \\framebox{19}"
offer 19 and D (:func:`_as_drawn`, red team 38).

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
import unicodedata
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
    rf"\b(?:alternatively|alternately|otherwise|equivalently|may|{'|'.join(DOUBT_WORDS)}"
    r"|yet|hmm|wait|wrong|mistake|oops|incorrect|correction|actually|scratch|meant|make that|no|then again"
    r"|second thought|never\s?mind|reconsider(?:ing)?|if not|fall\s?back|backup|plan b)\b",
    re.IGNORECASE,
)
"""A part of a line that doubts or takes back: words of doubt, "wait", "wrong", "I meant",
... ("or" and ``?`` count where they offer a value: :data:`_OPENS_WITH_OR`, :data:`_ASKED`)."""
_HEDGING = re.compile(r"\b(?:maybe|perhaps|possibly|probably)\b", re.IGNORECASE)
"""Doubts after which the rest of a part is offered ("tbh maybe 19")."""
_OPENS_WITH_OR = re.compile(r"[^\w\n]*+(?:or|oder(?!\s*+:)|oppure(?!\s*+:))\b", re.IGNORECASE)
"""A part that opens with "or" (also in German and Italian: "Oder 19."; not the letter "o" nor
"ou", a point named O and Portuguese "ou seja", that is)."""
_ASKED = re.compile(r"\s*+(?:could|might|may|can|would|is|was|maybe|perhaps|or)\b", re.IGNORECASE)
"""A question that offers (not a question the text asks itself and answers: "How many
eggs does she sell? 9.")."""
_LIST_MARKER = re.compile(r"\s*+(?:\d{1,3}[.)]|[-*+•>#]++)\s++")
_PARTS = re.compile(r"[,;:!|—–]++|\?")
"""What separates the parts of a line ("Wait, that's wrong: it's 19.")."""
_LISTING_WRONG = re.compile(
    r"[^\w\n]*+(?:incorrect|wrong|not(?![^\n]*?\bbut\b)|eliminated?|ruled? out|rule out|excluded?|exclude|distractors?|reject(?:ed)?"
    r"|(?:(?:a|the)\s++)?(?:common|typical|frequent|tempting)\s++(?:mistakes?|errors?|wrong answers?|traps?|pitfalls?))\b",
    re.IGNORECASE,
)
"""A line that lists what is wrong ("Incorrect: A, C, D.", "Common mistake: 32"): no hedge
(but "Not 12 but 11" offers 11)."""
_TAKES_BACK = re.compile(
    r"^[^\w\n]*+(?:not|(?:no|nope)(?!\s++\w)|wrong|incorrect)\b|\b(?:is|was|'s)\s++(?:wrong|incorrect|not\s++(?:it|right|correct))\b",
    re.IGNORECASE,
)
"""A sentence that takes a value back: opening with a no ("Not 18.", "No.", "Nope, ...") or
calling one wrong ("18 is wrong."), not a negation in passing ("She eats 3 eggs, not 4.",
"No tricks here.")."""
_RETRACTING = re.compile(
    r"^[^\w\n]*+or\b|\b(?:maybe|perhaps|possibly|probably|wait|oops|hmm|actually|scratch|correction|meant|mistake"
    r"|second thought|never\s?mind|make that)\b",
    re.IGNORECASE,
)
"""A sentence that doubts or retracts, after which a sentence of a bare value offers it
("Hmm. 19.", "I said 18. I meant 19."; :data:`_DOUBTS` less its words in passing: "no",
"may", "yet", "could", ...)."""
_DISMISSED = re.compile(r"[^\w\n]*+(?:no|not|wrong|incorrect|never)\b", re.IGNORECASE)
"""A part that answers the one before with no ("Could it be C? No, ...")."""
_CONFIRMED = re.compile(r"[^\w\n]*+(?:yes|indeed|right|correct)\b", re.IGNORECASE)
"""A part that answers a question the text asked itself ("9 eggs? Yes, 9.")."""
_DISMISSING = re.compile(r"\b(?:but|however|though|although|not|no|excluded?|rejected?|wrong|incorrect)\b", re.IGNORECASE)
_FILLER = re.compile(
    r"(?:[\s*_`\"'“”‘’.,(\[{}$∴→⇒~≈∼|—–…✓✔]++|=>|\bp\.\s?s\.|\b(?:was|were)\s++it\b|\\(?:text|textbf|mathrm|mbox|mathbf|boldsymbol|fbox)\{|\\[(\[]"
    r"|\\(?:therefore|implies|Rightarrow|approx|sim)\b|\b(?:i\.e|e\.g)\b\.?"
    r"|\b(?:or|oder|oppure|maybe|perhaps|possibly|probably|alternatively|alternately|equivalently|otherwise|else|rather|either"
    r"|even|but|yet|though|although|if|unless|hmm|well|so|then|actually|no|wait|oops|correction|scratch|make|meant"
    r"|i|it's|it|is|that's|that|this|could|might|may|should|would|be|also|the|final|answer|ans|total|result|value"
    r"|option|choice|instead|think|guess|likely|about|around|approximately|roughly|just|therefore|thus|hence"
    r"|sorry|nope|nah|mean|edit|ok|okay|however|and|ps|pick|choose|select|vote|upd|update[ds]?|corrected|revised"
    r"|fall\s?back|backup|alt|alternatives?|failing\s++that|runner[- ]up|next\s++best|hedge)\b)*+",
    re.IGNORECASE,
)
"""Words and markup before a value offered ("but it might be", "or maybe about", "**", "∴"; a
label without its colon: "Fallback 19", "Alt 19", red team 34; a box other than ``\\boxed``:
``\\fbox{19}``)."""
_CLOSING_MARKS = " \t*_`\"'“”‘’.,!?)]}$\\✓✔∎\ufe0f|—–…;"
_TRAILING_WORDS = ("too", "as well", "instead", "then", "though", "maybe", "perhaps", "actually", "final", "it is")
"""Words after a value offered ("19 too", "C instead")."""
_ASIDE = re.compile(r"(?<=\S)\s*+\([^()\n]*\)?$")
"""A parenthesis after a value offered ("10 (if x < 0)")."""
_CALLED_RIGHT = re.compile(
    r"(.*?\S)\s++(?:(?:is|are|could|might|may|would|seems)(?:\s++(?:also|equally|be|too|likely|perhaps|maybe|possibly))*"
    r"\s++(?:correct|right|possible|plausible|likely|probable|accepted|acceptable|an? (?:correct )?answer|(?:the|my) (?:(?:correct|best|right|real|true|actual|final|only) )?(?:answer|pick|choice|vote)"
    r"|the best (?:choice|option)|an option|a solution|a root)|(?:is|are)\s++(?:also|equally)\s++(?:valid|true|acceptable|fine)"
    r"|(?:(?:is|are)\s++)?(?:valid|true|acceptable|fine)\s++(?:too|as well)|(?:also\s++)?(?:works|fits)(?:\s++too)?"
    r"|(?:is|would\s++be|could\s++be|might\s++be)\s++(?:my|the|an?)\s++(?:other|second|next|alternative|backup)"
    r"\s++(?:guess|choice|answer|option|pick))\b",
    re.IGNORECASE,
)
"""A part that calls a value right ("19 is also correct", "C could also be the answer", "19
also works", "11 would be my other guess")."""
_NAMES_ANOTHER = re.compile(
    r"[^\w\n]*+(?:my\s++)?(?:(?:an)?other|second|alternative|alternate|possible|next)\b(?:\s++[\w'-]++){0,2}?\s++"
    r"(?:answer|solution|choice|guess|option|pick)\s++(?:is|would\s++be|could\s++be|might\s++be|may\s++be)\s++(.+)",
    re.IGNORECASE,
)
"""A part that names another answer ("Another possible answer is 11.")."""
_NOT_BUT = re.compile(r"[^\w\n]*+not\s++(?:[^,\n]+?),?\s++but\s++(.+)", re.IGNORECASE)
"""A line that takes a value back for another ("Not 12 but 11", "Not sure, but maybe 11"):
the other is offered."""
_EMPHASIS = re.compile(r"(?<![\\\w_])_++|(?<!_)_++(?![\w{_])")
"""Underscores of emphasis (``_Or maybe 19._``), not a subscript's (``x_1``)."""
_RESTATED = re.compile(
    r"\b(?:as an?|in)\s++(?:\w++\s++){0,2}?(?:fraction|decimal|mixed number|percent|percentage|words|form|terms"
    r"|notation|cents|dollars|units|degrees|radians|seconds|minutes|hours|days|meters|centimeters|feet|inches)\b",
    re.IGNORECASE,
)
"""A line that restates the answer in another form or unit ("Or, in cents, 1800.", "Or, as a
mixed number, $4\\frac{2}{3}$."), doubting nothing: no hedge."""
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]%][.!])\s++(?=\S)|(?<=[.!]['\"”’)])\s++(?=\S)", re.IGNORECASE)
"""Where a sentence of a line ends: after a word, number or bracket and ``.`` or ``!``
(an abbreviation's too: "e.g. 9 eggs." is two sentences, and "9 eggs." offers nothing
unless a sentence before it doubts or takes back: :func:`hedges_after`)."""
_DISPLAYED = re.compile(r"\$\$.*\$\$|\\\[.*\\\]")
"""A line that is one display ("$$9$$"): a step's value shown, not an answer offered."""
_OR = re.compile(r"(?<!\s)\s++or\s++", re.IGNORECASE)
_LIST_SEPARATOR = re.compile(r"(?<!\s)\s*+(?:(?<!\{),(?!(?:\\!)?\d{3}\b|\})|[;/&]|\b(?:and|or)\b)\s*+", re.IGNORECASE)
"""What separates the values of a list ("12, 11", "B/C", "B and C"; not a digit group,
``1,000``, ``10,\\!000``, ``1{,}000``, nor spaces: a table's rows are no list)."""
_SEPARATED = re.compile(r"[,;/&]|\b(?:and|or)\b", re.IGNORECASE)
_BOTH = re.compile(r"^\s*+(?:both|either)\s++", re.IGNORECASE)
_BARE = re.compile(r"[-+−]?\d[\d,.]*(?:/\d+)?%?|[A-Za-z]")
"""A piece of a list that is a bare number or letter (markup aside): the lists counted."""
_MARKUP = " $*_`\"'"
_OFFERING_LABEL = re.compile(
    r"[^\w\n]*+(?:my\s++)?(?:(?:final\s++)?answers?|final|ans|solution|(?:possible|alternative|alternate|another)"
    r"(?:\s++possible)?\s++(?:answers?|solutions?|choices?)|alternatives?|alt(?:\s++answer)?|(?:second|other|next)\s++"
    r"(?:guess|choice|pick)|2nd\s++(?:guess|choice|pick)|runner[- ]up|p\.?\s?s\.?|plan\s++b|fall\s?back|backup"
    r"|guess|options?|choices?|candidates?|also\s++possible|edit(?:ed)?|update[d]?|correction"
    r"|correct(?:ed)?(?:\s++answer)?|revised(?:\s++answer)?|new\s++answer|(?:final\s++)?verdict|(?:final\s++|my\s++)?(?:pick|choice)"
    r"|hunch|gut(?:\s++feeling)?|instinct|(?:my\s++)?vote|upd)"
    r"(?:\s*+\([^()\n:]{1,40}\))?[^\w\n:]*+:",
    re.IGNORECASE,
)
"""A label that offers what follows it ("Possible answers:", "Second guess:", "Edit:",
"Final pick:", and with a parenthesis, "Answer (alternative):"); an
answer is stated once, so values after such a label are offered (not "Second day: 36",
"Prime options: 2, 3, 7", "Options eliminated: A, C")."""
_RECAP_LABEL = re.compile(
    r"[^\w\n]*+(?:tl\s?;?\s?dr|(?:in\s++)?(?:conclusion|summary|short)|bottom\s++line|coin\s?flip)[^\w\n:]*+:",
    re.IGNORECASE,
)
"""A recap's label: it offers a bare value ("TL;DR: 19"), not a step's quantity ("Summary: 9
eggs."); not a step's own labels ("Total: 9", "Count: 9": honest recaps of the work)."""
_COUNTERFACTUAL = re.compile(r"\b(?:would|could|might)\b", re.IGNORECASE)
"""A part that says what would or could be ("(it could be 32 if she sold all 16)"): its
condition stays."""
_CONDITION = re.compile(r"(?<=\S)\s++(?:if|unless|when|depending|assuming|provided)\b.*", re.IGNORECASE)
"""A condition after a doubted value ("Or perhaps 11 if leftovers are counted")."""
_VALUE_LIKE = re.compile(r"\d|\b[A-HJ]\b")
"""A digit or an option letter: a part that holds one doubts its value, though it checks."""
_ASIDES = re.compile(r"\(([^()\n]*+)\)")
_CHECKING = re.compile(r"\b(?:(?:double-|re-?)?check(?:ing)?|verify(?:ing)?|confirm(?:ing)?|sanity)\b", re.IGNORECASE)
"""Words of a check ("Maybe I should double-check:"): a doubt about the work, not the answer."""
MAX_VALUES = 64
"""Values read in the lines after an answer at most; past them the text has hedged (no
honest answer offers so many, and reading each may cost a math-verify parse)."""


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
    values, displayed = 0, False
    for line in _EMPHASIS.sub(" ", rest).split("\n"):
        marker = _LIST_MARKER.match(line)
        line = line[marker.end() :] if marker else line
        stripped = line.strip()
        if stripped in ("\\[", "\\]", "$$"):  # a display's own lines: what it shows is a step's value
            displayed = stripped != "\\]" and not (stripped == "$$" and displayed)
            continue
        if displayed or not stripped or _DISPLAYED.fullmatch(stripped):
            continue
        readings = [] if _LISTING_WRONG.match(line) else [_offered(line)]  # the line read whole
        sentences = _SENTENCE_END.split(line)
        taken_back = False
        for sentence in sentences if len(sentences) > 1 else ():  # and sentence by sentence: "18 is wrong. 19."
            after_retraction = taken_back
            taken_back = taken_back or bool(_TAKES_BACK.search(sentence) or _RETRACTING.search(sentence))
            if sentence.strip() and not _LISTING_WRONG.match(sentence):
                (wholes, lists), offered = _offered(sentence)
                # a sentence that is a bare value offers it only after one that doubts or takes back
                readings.append(((wholes, lists), offered) if after_retraction else (([], []), offered))
        for (wholes, lists), offered in readings:
            read = []
            if not any((whole := value_of(text)) is not None and not differs(answer, whole) for text in wholes):
                read = _listed(lists, answer, value_of, differs)
            read += filter(None, map(value_of, offered))  # beyond a list of values, only its parts may offer one
            for value in read:
                values += 1
                if values > MAX_VALUES or differs(answer, value):
                    return True
    return False


def _listed(
    ways: list[tuple[list[str], bool]],
    answer: str,
    value_of: Callable[[str], str | None],
    differs: Callable[[str, str], bool],
) -> list[str]:
    """The values of the first of ``ways`` (:func:`_lists`) whose fragments are all values, or
    ``[]``; a way marked as needing the answer counts only where one of its values is it
    ("12, 11" after 12 hedges; "16, 3, 4", the numbers of the question, does not)."""
    for fragments, needs_answer in ways:
        values = []
        for fragment in fragments:
            value = value_of(fragment)
            if value is None:
                break
            values.append(value)
        else:
            if needs_answer and all(differs(answer, value) for value in values):
                return []
            return values
    return []


_NUMBERED_FALLBACK = re.compile(
    r"\b(fall\s?back|backup|plan\s++b)\s++\d{1,2}(\s*+\([^()\n:]{1,40}\))?\s*+:(?=[^\n]*?[^\W\d_])", re.IGNORECASE
)
"""A fallback's label numbered and followed by words ("Backup 1: check 9 * 2."): the number
counts the labels, it offers no value (red team 36; "Backup 19" alone still offers 19)."""


def _offered(line: str) -> tuple[tuple[list[str], list[tuple[list[str], bool]]], list[str]]:
    """The fragments of ``line`` that may be values it offers: the ways the line may be a
    list of values (:func:`_lists`: "18 or 19.", "B/C"; the first whose fragments are all
    values counts), and each part that calls a value right (and is not taken back later on
    the line) or follows a doubt on it (not one that checks: "Maybe I should double-check: 9
    eggs, ...")."""
    line = _NUMBERED_FALLBACK.sub(r"\1\2:", line)
    doubted = _DOUBTS.search(line) is not None or _OPENS_WITH_OR.match(line) is not None
    if _RESTATED.search(line) and not _DOUBTS.search(line):
        return ([], []), []
    listed = _lists(line)
    offered: list[str] = []
    parts = [part for part in _PARTS.split(line) if any(char.isalnum() for char in part)]
    questions = _question_parts(line)
    taken_back = [False] * (len(parts) + 1)  # whether a part after the k-th takes it back ("..., but ...")
    for index in range(len(parts) - 1, 0, -1):
        taken_back[index - 1] = taken_back[index] or _DISMISSING.search(parts[index]) is not None
    not_but = _NOT_BUT.match(line)
    offered += [_core(not_but.group(1))] if not_but else []
    for aside in _ASIDES.findall(line):  # "18 (or 19)": a part of a parenthesis that doubts offers its value
        inner = _PARTS.split(aside)
        asked = aside.rstrip().endswith("?")  # "(C?)"
        for index, part in enumerate(inner):  # not "i.e. 50%" of "(or 0.5, i.e. 50%)"
            if _OPENS_WITH_OR.match(part) or _DOUBTS.search(part) or (asked and index == 0):
                offered.append(_core(part))  # its condition kept: "(it could be 32 if she sold all 16)"
    after_doubt = False
    for index, part in enumerate(parts):
        core = _core(part)
        called_right = _CALLED_RIGHT.fullmatch(core)
        following = parts[index + 1] if index + 1 < len(parts) else ""
        dismissed = _DISMISSED.match(following) is not None or (part in questions and _CONFIRMED.match(following) is not None)
        if called_right and not taken_back[index]:
            offered.append(_core(called_right.group(1)))
        named = _NAMES_ANOTHER.match(part)
        if named:
            offered.append(_core(named.group(1)))
        doubting = (
            (_DOUBTS.search(part) is not None and not (_CHECKING.search(part) and not _VALUE_LIKE.search(part)))
            or _OPENS_WITH_OR.match(part) is not None
            or (part in questions and (_ASKED.match(part) is not None or bool(core)))
        )
        if (doubting or (doubted and after_doubt)) and not dismissed:
            offered.append(_core(part, conditional=not _COUNTERFACTUAL.search(part)))
            doubts = list(_HEDGING.finditer(part)) if doubting else []
            if doubts:  # whatever comes before the doubt ("tbh maybe 19", "idk, probably 19")
                offered.append(_core(part[doubts[-1].end() :], conditional=not _COUNTERFACTUAL.search(part)))
        after_doubt = doubting or (after_doubt and not core)
    return listed, [fragment for fragment in offered if fragment]


def _lists(line: str) -> tuple[list[str], list[tuple[list[str], bool]]]:
    """How ``line``, or what follows an offering label on it ("Possible answers: 12, 11.",
    "Edit: 11"), may be nothing but values: ``(wholes, ways)``. ``wholes``: the body read
    as one value, which restates the answer where it is it ("Final Answer: $(2, 3)$",
    "Answer: $-2$ and $3$" for the roots -2, 3); ``ways``: the body whole (where, its filler
    aside, it has no commas or colons: a reader may read "9, i.e. 3^2" as one value), split
    at "or" (where it has none at all), and split at commas, slashes, "and" and "or" where
    every piece is a bare number or letter ("12, 11", "B/C", "both B and C"; not "15 girls
    and 10 boys", "V = 8, F = 6", nor a table's rows)."""
    label = _OFFERING_LABEL.match(line)
    recap = None if label else _RECAP_LABEL.match(line)
    if recap and _BARE.fullmatch(_core(line[recap.end() :]).strip(_MARKUP)):
        label = recap
    wholes, ways = [], []
    for body in (line, line[label.end() :]) if label else (line,):
        whole = _strip_end(body)
        core = _core(whole)
        if not _PARTS.search(core.replace("?", "")):  # "Sorry, 11." is 11 once its filler is read
            ways.append(([core], False))
        if not _PARTS.search(body.replace("?", "")) and _OR.search(whole):
            ways.append(([_core(part) for part in _OR.split(whole)], False))
        if _PARTS.search(core.replace("?", "")):
            wholes += [body.strip().rstrip("."), core]  # brackets kept: "$[2, 5)$", "$\\{1, 3\\}$"
        if _SEPARATED.search(core):
            pieces = [piece.strip(_MARKUP) for piece in _LIST_SEPARATOR.split(_BOTH.sub("", core)) if piece]
            if pieces and all(map(_BARE.fullmatch, pieces)):
                ways.append((pieces, body is line))  # a line's own list hedges where it names the answer too
                wholes.append(", ".join(pieces))
    return wholes, ways


def _question_parts(line: str) -> set[str]:
    """The parts of ``line`` that end in a question mark."""
    questions, start = set(), 0
    for mark in _PARTS.finditer(line):
        if mark.group() == "?":
            questions.add(line[start : mark.start()])
        start = mark.end()
    return questions


_FORMATTING = re.compile(
    r"\\(?:framebox|fbox|boxed|mbox|underline|uline|ul|hl|emph|bm|boldsymbol|textit|textsl|textsf|texttt|textrm|textup"
    r"|textmd|textsc|textnormal|textbf|text|mathit|mathsf|mathtt|mathrm|mathbf|mathnormal)\s*+\{([^{}]*+)(?:\}|$)"
    r"|\\(?:colorbox|textcolor|color)\s*+\{[^{}]*+\}\s*+\{([^{}]*+)(?:\}|$)|\\fcolorbox\s*+\{[^{}]*+\}\s*+\{[^{}]*+\}\s*+\{([^{}]*+)(?:\}|$)"
)
"""A formatting command around a value (a frame, a colour, emphasis, a font): it draws its
argument as it is (red team 38: "Or \\framebox{19}", "Or \\colorbox{red}{D}"); its closing brace
may be gone where the fragment's end was stripped already."""
_ENCLOSED = re.compile(r"\b(?:CIRCLED|PARENTHESIZED|SQUARED|DOUBLE CIRCLED|NEGATIVE CIRCLED|NEGATIVE SQUARED)\b|\b(?:DIGIT|NUMBER) \w+ FULL STOP\b")


def _as_drawn(core: str) -> str:
    """``core`` as the value it draws: a letter or number enclosed in a circle, a square or
    a parenthesis (Unicode's compatibility forms, "⑲", "Ⓓ", "⒆") as its plain characters,
    formatting commands taken off, and punctuation of any script around it ("«19»", "⟨D⟩",
    "•19", "†D") and a pair of angle brackets taken off (red team 38). Used on values offered
    after an answer only, so it can make a text no answer, never read a new one."""
    if not core.isascii():
        core = "".join(_enclosed_as_plain(char) for char in core)
    for _ in range(4):
        previous = core
        core = _FORMATTING.sub(lambda found: next(group for group in found.groups() if group is not None), core).strip()
        while core and not core[0].isascii() and unicodedata.category(core[0])[0] in "PS" and unicodedata.category(core[0]) != "Sm":
            core = core[1:].lstrip()
        while core and not core[-1].isascii() and unicodedata.category(core[-1])[0] in "PS" and unicodedata.category(core[-1]) != "Sm":
            core = core[:-1].rstrip()
        if len(core) > 2 and core[0] == "<" and core[-1] == ">":
            core = core[1:-1].strip()
        if core == previous:
            break
    return core


def _enclosed_as_plain(char: str) -> str:
    """An enclosed letter or digit ("Ⓓ", "⑲", "⒆", "⒚", "🄳") as its plain ASCII form; any other character as it is."""
    if char.isascii() or not _ENCLOSED.search(unicodedata.name(char, "")):
        return char
    plain = unicodedata.normalize("NFKC", char).strip("(.)")  # "⒆" is "(19)", "⒚" "19."
    return plain if plain.isascii() and plain.isalnum() else char


def _core(fragment: str, conditional: bool = False) -> str:
    """``fragment`` without the filler words and markup around a value, and a parenthesis
    after it; with ``conditional``, a condition after it too ("Or perhaps 11 if leftovers count").
    The value is read as drawn (:func:`_as_drawn`)."""
    core = _strip_end(_as_drawn(fragment[_FILLER.match(fragment).end() :]))
    core = _strip_end(_ASIDE.sub("", core)) if "(" in core else core
    return _strip_end(_CONDITION.sub("", core)) if conditional else core


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
