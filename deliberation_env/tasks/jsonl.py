"""Question/answer JSONL files: the ``jsonl`` task."""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import Problem, check_scoring
from deliberation_env.tasks.lookalikes import as_read
from deliberation_env.tasks.numeric import (
    NUMERIC_INSTRUCTIONS,
    canonical_number,
    exact_value,
    read_number,
)
from deliberation_env.tasks.sources import (
    TEST_FRACTION,
    Record,
    SplitsFromSource,
    load_splits,
    question_key,
    require,
    require_answer,
    resolve_source,
)

TEXT_INSTRUCTIONS = "Think step by step. End with a line of the form 'Answer: X'."

ANSWER_KINDS = ("auto", "numeric", "text")

_ANSWER_MARKER = re.compile("answer:", re.IGNORECASE)
_FIRST_MARKER = re.compile("^.*?answer:", re.IGNORECASE | re.MULTILINE)  # the first of its line


def canonical_text(text: str) -> str:
    """Case- and space-insensitive form of a short text answer."""
    return " ".join(text.strip().rstrip(".").split()).casefold()


_MARKUP = re.compile(r"^(([*_`])\2*+)(?=\S)(.*\S)\1$|^[*_`]++\s++(.+)$", re.DOTALL)
"""Markdown around a whole answer: the same run of emphasis or code marks at both ends
(``**paris**``, ``*paris*``, `` `paris` ``), or a run at the start before a space (``**
paris``, what a bold label's ``**Answer:** Paris`` leaves after ``answer:``)."""
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’"}


def as_asked(answer: str, reference: str) -> str:
    """``answer`` (canonical) read as the reference is written: each layer of markup around
    it taken off in turn (:data:`_MARKUP`, a pair of quotes, a final ``!`` after a word, not
    after a number: ``5!`` is 120),
    until a form equals ``reference``; where none does, the form without any. Only markup
    around the answer goes, never what the reference holds: ``__init__`` stays itself for
    the reference ``__init__``, and ``A`` is never ``A*``.

    >>> [as_asked(text, "paris") for text in ("**paris**", "** paris", '"paris"!', "`paris`", "paris (france)")]
    ['paris', 'paris', 'paris', 'paris', 'paris (france)']
    >>> as_asked("`__init__`", "__init__"), as_asked("a", "a*"), as_asked("*a*", "a*")
    ('__init__', 'a', 'a')
    """
    form = answer
    while form != reference:
        unwrapped = _MARKUP.match(form)
        if unwrapped:
            inner = unwrapped.group(3) if unwrapped.group(3) is not None else unwrapped.group(4)
        elif len(form) > 1 and _QUOTES.get(form[0]) == form[-1]:
            inner = form[1:-1]
        elif len(form) > 1 and form[-1] == "!" and (form[-2].isalpha() or form[-2] in "\"'”’*_`"):  # not 5!
            inner = form[:-1]
        else:
            return form
        inner = canonical_text(inner)
        if not inner:
            return form
        form = inner
    return form


def _answer_after(text: str, start: int) -> str:
    """The canonical text from ``start`` to the end of its line, or, where that is empty,
    of the next line that is not ("Final answer:" then "Paris" on its own line)."""
    rest, _, after = text[start:].partition("\n")
    return canonical_text(rest) or next((line for line in map(canonical_text, after.split("\n")) if line), "")


def _head_ends(text: str, head: re.Pattern[str]) -> list[int]:
    """Where each match of ``head`` ends in ``text``, matched in the text as a person reads
    it (:func:`~deliberation_env.tasks.lookalikes.as_read`: "Аnswer:" in Cyrillic letters,
    "ans\u200bwer:"), so that the answer after it is read from ``text`` as written (an
    answer in Cyrillic stays Cyrillic)."""
    if text.isascii():
        return [match.end() for match in head.finditer(text)]
    read, where = [], []  # the read text's characters, and the position in ``text`` of each
    for position, char in enumerate(text):
        shown = as_read(char)
        read.append(shown)
        where += [position] * len(shown)
    return [where[match.end() - 1] + 1 for match in head.finditer("".join(read))]


class JSONLTask(SplitsFromSource):
    """Any JSONL file of questions and answers.

    **Splits.** A directory with ``train.jsonl`` and ``test.jsonl`` keeps its own split
    (one of the two is enough for the split it holds); so does a Hugging Face dataset
    ``"hf:<dataset>[:<config>]"`` with both splits.
    A single file is split deterministically (half and half, or ``test_fraction``), by a hash of each question's
    normalized text (:func:`~deliberation_env.tasks.sources.hash_split` of
    :func:`~deliberation_env.tasks.sources.question_key`): the split does not depend on
    the file's order, and copies of a question always land in the same split, so the
    test split is never trained on.

    **Answers.** With ``answers="auto"`` the task is numeric when every answer of *every*
    split is a number, and text otherwise (``task.numeric`` says which). Numeric
    answers are compared as numbers (``"1,000"`` equals ``1000``); text answers are
    compared case- and space-insensitively, read from an ``Answer: X`` line of the
    model's text. ``answers="numeric"`` insists on numbers: an answer that is not one is
    an error naming its ``path:line``. ``answers="text"`` compares every answer as text.

    **Scoring.** Numeric answers are read as :mod:`deliberation_env.tasks.numeric` says:
    ``scoring="strict"`` (the default) only from "The answer is N.", ``"lenient"`` as the
    last number anywhere. Text answers follow "Answer:" (any case) to the end of its line,
    or, where nothing follows it there, on the next line that is not empty: under strict
    scoring the answer of a line is what follows its first "Answer:", and every line with
    one must give the same answer (a text that answers twice, differently, has none);
    under lenient scoring the last "Answer:" that has an answer counts. Both find the heads
    as a person reads them (:func:`~deliberation_env.tasks.lookalikes.as_read`): an
    "Аnswer:" in Cyrillic letters, or with a zero-width space inside, is a head; the answer
    after it is read as written. A line after the answer that doubts it ("Or maybe
    London.") is not read: the answer stated stays the one read, so it gains nothing.

    Ids are ``<file stem>-<split>-<index in split>``.

    Args:
        path: A JSONL file (hash-split), a directory with ``train.jsonl`` and ``test.jsonl``,
            or ``"hf:<dataset>[:<config>]"`` (see :mod:`deliberation_env.tasks.sources`).
        question_field: Name of the question field (a non-empty string in every record).
        answer_field: Name of the answer field (a non-empty string or a number).
        answers: ``"auto"``, ``"numeric"`` or ``"text"`` (see above).
        scoring: ``"strict"`` or ``"lenient"`` (see above).
        test_fraction: The share of a single file's questions placed in ``test`` (by the
            hash, so the split stays fixed as the file grows).

    Raises:
        FileNotFoundError: If ``path`` does not exist (saying what it accepts).
        ValueError: On a bad ``answers``, ``scoring`` or ``test_fraction``, or a malformed
            record (naming ``path:line``).
    """

    name = "jsonl"

    def __init__(
        self,
        path: str | Path,
        question_field: str = "question",
        answer_field: str = "answer",
        answers: str = "auto",
        scoring: str = "strict",
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        self.scoring = check_scoring(scoring)
        if answers not in ANSWER_KINDS:
            raise ValueError(f"answers must be one of {ANSWER_KINDS}, got {answers!r}")
        self.path = resolve_source(self.name, path)
        self.question_field, self.answer_field = question_field, answer_field
        records = load_splits(self.path, lambda where, r: question_key(require(where, r, question_field)), test_fraction)
        if answers == "auto":
            answers = "numeric" if self._all_numeric(records) else "text"
        self.numeric = answers == "numeric"
        self.instructions = NUMERIC_INSTRUCTIONS if self.numeric else TEXT_INSTRUCTIONS
        self._problems = {split: self._build(split, located) for split, located in records.items()}

    def _all_numeric(self, records: dict[str, list[Record]]) -> bool:
        """Whether every answer of every split is a number."""
        return all(
            canonical_number(require_answer(where, record, self.answer_field)) is not None
            for located in records.values()
            for where, record in located
        )

    def _build(self, split: str, records: list[Record]) -> tuple[Problem, ...]:
        """The problems of one split, in file order."""
        return tuple(
            Problem(
                f"{Path(self.path).stem}-{split}-{index}",
                require(where, record, self.question_field),
                self._reference(where, record),
            )
            for index, (where, record) in enumerate(records)
        )

    def _reference(self, where: str, record: dict[str, Any]) -> str:
        """A record's answer in canonical form (``ValueError`` naming ``where`` if it has none)."""
        answer = require_answer(where, record, self.answer_field)
        if self.numeric:
            reference = canonical_number(answer)
            if reference is None:
                raise ValueError(f"{where}: answer {answer!r} is not a number (the task is numeric)")
            return reference
        reference = canonical_text(answer)
        if not reference:
            raise ValueError(f"{where}: answer {answer!r} is empty once normalized")
        return reference

    def parse(self, problem: Problem, text: str) -> str | None:
        """The number (numeric tasks) or the text after ``Answer:`` (without the markdown
        around it: :func:`as_asked`), under the task's ``scoring`` (see the class docstring)."""
        if self.numeric:
            return read_number(text, self.scoring)
        if self.scoring == "strict":
            answers = {as_asked(_answer_after(text, end), problem.answer) for end in _head_ends(text, _FIRST_MARKER)} - {""}
            return answers.pop() if len(answers) == 1 else None
        answers = [_answer_after(text, end) for end in _head_ends(text, _ANSWER_MARKER)]
        last = next((answer for answer in reversed(answers) if answer), None)  # the last one not empty
        return None if last is None else as_asked(last, problem.answer)

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Exact match of canonical answers (of their values, for numbers: "1/2" is "0.5")."""
        return decision is not None and self.decision_key(problem, decision) == self.decision_key(problem, problem.answer)

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Canonical answers agree when they are equal strings (numbers: equal values)."""
        return exact_value(decision) if self.numeric else decision
