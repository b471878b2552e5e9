"""MMLU (Hendrycks et al., 2021): four-way multiple choice over 57 subjects.

Two layouts are read:

- **The original release**: a directory (searched recursively, so both ``data/`` and a
  flat folder work) of per-subject CSV files without a header, one question per row:
  ``question, A, B, C, D, answer`` with ``answer`` a letter. ``<subject>_test.csv`` form
  the ``test`` split; ``<subject>_dev.csv`` and ``<subject>_val.csv`` (the few-shot and
  validation questions) form ``train``.
- **JSONL** (a directory with ``train.jsonl``/``test.jsonl``, kept as it is; one file
  split by a hash of the normalized question text, ``test_fraction`` of it in test, so
  copies of a question share a split; ``"hf:cais/mmlu:all"``, the dataset on the
  Hugging Face hub, whose ``dev`` and ``validation`` questions form ``train``; or
  ``"sample"``, 5 questions of each split that ship with the package): ``question``, the
  options as ``choices`` (a list of four strings or numbers) or fields ``A``-``D``,
  ``answer`` as a letter or an index 0-3, and optionally ``subject`` and ``id`` (unique
  within the task; without it a problem's id is ``mmlu:<split>-<index in split>``).

Where to get it and its exact format: ``docs/data.md``.

Files are UTF-8 (a leading byte-order mark is allowed); a bad row or record is an error
naming ``path:line``.

Decisions are the letters ``A``-``D``, read under the task's ``scoring`` option:

- ``"strict"`` (the default; the prompt asks for "Answer: X"): a *statement* is "Answer:"
  (also "**Answer**:") or "answer is" (any case), then optional markup (spaces, ``**``,
  ``:``, ``(``, ``[``, quotes, ``\\(``, ``\\[``, ``\\boxed{``, ``\\text{``-like wrappers, a
  ``$`` opening one of them, the word "option"), then a capital letter A-D standing alone
  (or in ``$``...``$`` or backticks closed right after it), and after it on its line
  nothing but closing markup and punctuation (one ``.`` or ``!``): "Answer: B",
  "**Answer:** (B)", "Answer: $B$", "The answer is B.". A statement with more on its line
  ("Answer: B or C", "Answer: B (or C)", "Answer: B, since ...") is no answer when it is
  the text's last, unless the more is its option's own text ("Answer: (B) Heart");
  before the last, it is a step's when it takes itself back ("I first thought the answer
  is C, but ...") or states the final letter, and a hedge otherwise. The decision is the stated letter when every other statement
  states the same one, and so do the text's other marks of a final answer
  (``\\boxed{X}``, also ``\\fbox{X}`` and ``\\boxed{X.}``, "the correct/right/best/final option/choice/answer is X", "option X
  is correct/right/the best/the answer"); otherwise there is none (:func:`stated_letter`).
  A letter in passing ("option C is wrong", "the most tempting option is A") is no mark.
  A later line that offers another option ("Answer: B" then "Or possibly C.", "C is also
  correct.", "Actually no, C.", "Answer = C", or "C" alone) is a hedge, so no answer; one that discusses
  the others ("Option C might seem right, but ...") is not
  (:func:`~deliberation_env.tasks.hedges.hedges_after`).
- ``"lenient"``: the last "Answer: X" / "the answer is (X)" / "the correct option is X" /
  "option X is right" / ``\\boxed{X}`` (markup as above between head and letter:
  "**Answer:** B"), else a reply that is just a letter (:func:`extract_letter`).

Both read the text as a person does (:func:`~deliberation_env.tasks.lookalikes.as_read`):
"Аnswer: С" in Cyrillic letters is "Answer: C".
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import SPLITS, Problem, check_scoring, selection
from deliberation_env.tasks.hedges import hedges_after
from deliberation_env.tasks.lookalikes import as_read
from deliberation_env.tasks.numeric import RETRACTION
from deliberation_env.tasks.sources import (
    TEST_FRACTION,
    SplitsFromSource,
    check_unique_ids,
    load_splits,
    optional_text,
    question_key,
    read_text,
    require,
    require_answer,
    resolve_source,
)

LETTERS = ("A", "B", "C", "D")

MMLU_INSTRUCTIONS = (
    "Think step by step, then end with a line of the form 'Answer: X' where X is the "
    "letter (A, B, C or D) of the correct option."
)

_CSV_SPLITS = {"test": ("test",), "train": ("dev", "val")}
_OPENING = r"(?>(?:[\s*:(\['\"‘“]|\\[(\[]|\\boxed\{|\\(?:text|textbf|mathbf|mathrm)\{|\$(?=\\)|(?i:option|choice)\s)*)"
"""Markup between an answer's head and its letter: spaces, ``**``, ``:``, ``(``, ``[``,
quotes, ``\\(``, ``\\[``, ``\\boxed{``, ``\\text{`` (``\\textbf{``, ...), a ``$`` that
opens one of them, and the word "option" or "choice" (one atomic run)."""
_LETTER = r"(?:\$([ABCD])\$|`([ABCD])`|([ABCD])\b)"
"""An option letter: alone, or in ``$``...``$`` or backticks closed right after it (so
``$A^{-1}B$`` is no letter)."""
_FINAL = r"\b(?i:correct|right|best|final)\s+(?i:option|choice|answer)(?:\s+(?i:is)\b|\s*:)"
"""A qualified final mark: "the correct option is", "the best choice is"."""
_FINAL_AFTER = r"\b(?i:option|choice)\s+\(?([ABCD])\)?\s+(?i:is)\s+(?i:the\s+)?(?i:correct|right|best|answer)\b"
"""A final mark with the letter first: "option B is correct", "choice C is the answer"."""
_HEAD = r"\b(?i:answer)(?:\s+(?i:is)\b|\**\s*:)"
"""A statement's head: "Answer:", "**Answer**:", "the answer is"."""
_MARKED = re.compile(rf"(?:{_HEAD}|{_FINAL}){_OPENING}{_LETTER}|{_FINAL_AFTER}")
_BOXED = re.compile(r"\\boxed\{\s*+(?:\\(?:text|textbf|mathbf|mathrm)\{\s*+)?\(?([ABCD])\)?\s*+(?:\}\s*+)?\}")
_BOX_MARK = re.compile(r"\\(?:boxed|fbox)\{\s*+(?:\\(?:text|textbf|mathbf|mathrm)\{\s*+)?\(?([ABCD])\)?[.!]?\s*+(?:\}\s*+)?\}")
"""A box that marks a letter as strict scoring checks the other marks: also ``\\fbox{C}`` and
with a period, ``\\boxed{C.}`` (red team 34: "Answer: B" then either was read as B)."""
_ALONE = re.compile(r"^\W*\(?([ABCD])\)?\W*$")
_STATED = re.compile(rf"{_HEAD}{_OPENING}{_LETTER}([^\n]*)")
_OTHER_MARK = re.compile(rf"{_FINAL}{_OPENING}{_LETTER}|{_FINAL_AFTER}")
_CLOSING = re.compile(r"(?:[\s*)$`\]'\"’”}]|\\[)\]])*+[.!;:。]?(?:[\s*$`'\"’”}]|\\[)\]])*+")
_OPTION_TEXT = re.compile(r"[\W_]+")  # an option's text compared by its words, case aside
# runs of spaces and markup are possessive (``*+``): a run that ends in something else fails at
# once, where trying every split of it between two patterns took seconds for thousands of spaces


def stated_letter(text: str, choices: Sequence[str] | None = None) -> str | None:
    """The option letter ``text`` states as its answer in the asked form (strict scoring:
    see the module docstring), or ``None``. With the question's ``choices`` (A-D's texts),
    a statement may end in its option's text ("Answer: (B) Heart").

    >>> stated_letter("B looks tempting.\\nAnswer: C"), stated_letter("**Answer:** (C)\\nSo the answer is C.")
    ('C', 'C')
    >>> stated_letter("Answer: B. No wait, Answer: C"), stated_letter("C"), stated_letter("the answer is a guess")
    (None, None, None)
    >>> stated_letter("Answer: B or C"), stated_letter("**Answer:** (B) (or C)")
    (None, None)
    >>> stated_letter("Answer: $B$"), stated_letter("Answer: B\\nAnswer: `C`"), stated_letter("Answer: B\\nThe correct option is C.")
    ('B', None, None)
    >>> stated_letter("The most tempting option is A, but it is wrong.\\nAnswer: C")
    'C'
    """
    text = as_read(text)
    found = list(_STATED.finditer(text))
    statements = [("".join(match.groups("")[:3]), match.group(4)) for match in found]
    if not statements or not _ends(*statements[-1], choices):  # no statement, or a final one with more on its line
        return None
    letter = statements[-1][0]
    rest = text[found[-1].end() :]
    option_words = [_words(str(option)) for option in choices or ()]  # once, not per line read
    if hedges_after(rest, letter, lambda fragment: _offered_letter(fragment, option_words)):
        return None
    for stated, rest in statements:  # an earlier one with more on its line: a step's when it takes itself back
        if stated != letter and (_ends(stated, rest, choices) or not RETRACTION.search(rest)):
            return None
    others = set(_BOX_MARK.findall(text)) | {"".join(found) for found in _OTHER_MARK.findall(text)}
    return letter if others <= {letter} else None


def _offered_letter(fragment: str, option_words: Sequence[list[str]]) -> str | None:
    """The option a fragment of a line after the answer is, when it is one letter alone
    (markup aside, either case) or an option's own text (``option_words``: each option's
    :func:`_words`); else ``None``."""
    core = fragment.strip(" \t*_`$()[]'\".=:-–—>")  # "Answer = C", "Answer - C": a second statement (red team 34)
    if len(core) == 1 and core.upper() in LETTERS:
        return core.upper()
    words = _words(fragment)
    return next((l for l, o in zip(LETTERS, option_words) if words and words == o), None)


def _ends(letter: str, rest: str, choices: Sequence[str] | None) -> bool:
    """Whether a statement of ``letter`` ends with it: nothing but closing markup after it
    on its line, or that option's own text ("Answer: (B) Heart")."""
    if _CLOSING.fullmatch(rest):
        return True
    if not choices:
        return False
    words = _words(rest)
    return bool(words) and words == _words(str(choices[LETTERS.index(letter)]))


def _words(text: str) -> list[str]:
    """An option's text as compared: its words, case, markup and a leading "the" or "an"
    aside ("B) The heart" names the option "Heart"; "A) Lungs" is no article and "Lungs")."""
    words = _OPTION_TEXT.sub(" ", text).lower().split()
    return words[1:] if len(words) > 1 and words[0] in ("the", "an") else words  # "a" may be the letter A


def extract_letter(text: str) -> str | None:
    """The chosen option letter in a model's text under lenient scoring, or ``None``.

    The last "Answer: X" / "the answer is (X)" / ``\\boxed{X}``, else a reply that is
    just a letter.

    >>> extract_letter("B looks tempting, but the answer is (C).")
    'C'
    >>> extract_letter("The answer is a guess."), extract_letter("no idea")
    (None, None)
    >>> extract_letter("D.")
    'D'
    """
    text = as_read(text)
    for pattern in (_MARKED, _BOXED):
        matches = pattern.findall(text)
        if matches:
            return "".join(matches[-1])
    alone = _ALONE.match(text.strip())
    return alone.group(1) if alone else None


class MMLUTask(SplitsFromSource):
    """MMLU from the original per-subject CSVs or from JSONL.

    Args:
        path: A directory of ``<subject>_{test,dev,val}.csv`` files, a directory with
            ``train.jsonl``/``test.jsonl``, one JSONL file, ``"hf:<dataset>[:<config>]"``
            (e.g. ``"hf:cais/mmlu:all"``) or ``"sample"``.
        subjects: Keep only these subjects (e.g. ``["anatomy", "virology"]``); ``None``: all.
        scoring: ``"strict"`` (only "Answer: X" counts) or ``"lenient"`` (see the module
            docstring).
        test_fraction: The share of a single file's questions placed in ``test``.

    Raises:
        FileNotFoundError: If ``path`` does not exist (saying what it accepts).
        ValueError: On a malformed row (naming ``path:line``) or an unknown subject.
    """

    name = "mmlu"
    instructions = MMLU_INSTRUCTIONS

    def __init__(
        self,
        path: str | Path,
        subjects: Iterable[str] | None = None,
        scoring: str = "strict",
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        self.scoring = check_scoring(scoring)
        self.path = resolve_source(self.name, path)
        self.subjects = selection("subjects", subjects)
        located = self._load(test_fraction)
        check_unique_ids(located)
        found = {problem.meta["subject"] for pairs in located.values() for _, problem in pairs}
        if self.subjects is not None and not self.subjects <= found:
            unknown = ", ".join(sorted(self.subjects - found))
            raise ValueError(
                f"unknown MMLU subjects: {unknown}; {path} has: {', '.join(sorted(found))}"
            )
        self._problems = {  # ordered by subject (CSV) or as the source lists them
            split: tuple(p for _, p in pairs if self.subjects is None or p.meta["subject"] in self.subjects)
            for split, pairs in located.items()
        }

    def _load(self, test_fraction: float) -> dict[str, list[tuple[str, Problem]]]:
        """Every problem of each split, with where each was read."""
        if _is_csv_release(Path(self.path)):
            return {
                split: [located for file in _csv_files(Path(self.path), split) for located in _read_csv(file)]
                for split in SPLITS
            }
        records = load_splits(self.path, lambda where, r: question_key(require(where, r, "question")), test_fraction)
        return {
            split: [(where, _from_record(where, record, f"mmlu:{split}-{index}")) for index, (where, record) in enumerate(pairs)]
            for split, pairs in records.items()
        }

    def parse(self, problem: Problem, text: str) -> str | None:
        """The chosen letter under the task's ``scoring`` (:func:`stated_letter` when strict,
        :func:`extract_letter` when lenient)."""
        return stated_letter(text, problem.meta.get("choices")) if self.scoring == "strict" else extract_letter(text)

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether the chosen letter is the reference letter."""
        return decision is not None and decision == problem.answer

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Letters agree when equal."""
        return decision


def _is_csv_release(path: Path) -> bool:
    """Whether ``path`` is a directory in the original release's layout (any split)."""
    return path.is_dir() and any(
        next(path.rglob(f"*_{suffix}.csv"), None)
        for suffixes in _CSV_SPLITS.values()
        for suffix in suffixes
    )


def _csv_files(path: Path, split: str) -> list[Path]:
    """The per-subject CSV files of ``split`` under ``path``, by subject."""
    return sorted(
        (file for suffix in _CSV_SPLITS[split] for file in path.rglob(f"*_{suffix}.csv")),
        key=lambda file: (file.name.rsplit("_", 1)[0], file.name),
    )


def _read_csv(file: Path) -> list[tuple[str, Problem]]:
    """The problems of one subject's CSV file (no header: question, A, B, C, D, answer),
    with where each was read."""
    subject = file.name.rsplit("_", 1)[0]
    problems = []
    reader = csv.reader(io.StringIO(read_text(file), newline=""))
    for row in reader:
        where = f"{file}:{reader.line_num}"
        if len(row) != 6:
            raise ValueError(
                f"{where}: expected 6 columns (question, A, B, C, D, answer), got {len(row)}"
            )
        if not row[0].strip():
            raise ValueError(f"{where}: the question is empty")
        answer = _letter(where, row[5])
        problem_id = f"mmlu:{file.stem}:{len(problems)}"
        problems.append((where, _problem(problem_id, subject, row[0], row[1:5], answer)))
    return problems


def _from_record(where: str, record: dict[str, Any], default_id: str) -> Problem:
    """A problem from a JSONL / dataset record; its id is ``mmlu:<the record's id>``, else ``default_id``."""
    if "choices" in record:
        choices = record["choices"]
        if not isinstance(choices, list | tuple) or len(choices) != 4:
            raise ValueError(f"{where}: 'choices' must be a list of four options, got {choices!r}")
        choices = _options(where, [f"choices[{i}]" for i in range(4)], choices)
    else:
        missing = [letter for letter in LETTERS if letter not in record]
        if missing:
            raise ValueError(f"{where}: no 'choices' and missing option fields {', '.join(missing)}")
        choices = _options(where, LETTERS, [record[letter] for letter in LETTERS])
    answer = _letter(where, require_answer(where, record, "answer"))
    subject = optional_text(where, record, "subject") or "unknown"
    problem_id = f"mmlu:{_record_id(where, record)}" if record.get("id") is not None else default_id
    return _problem(problem_id, subject, require(where, record, "question"), choices, answer)


def _options(where: str, names: Sequence[str], values: Sequence[Any]) -> list[str]:
    """The four options as strings (each a string, possibly empty, or a number)."""
    for name, value in zip(names, values, strict=True):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"{where}: option {name} must be a string or a number, got {value!r}")  # noqa: TRY004 (bad data, not a bad argument)
    return [str(value) for value in values]


def _record_id(where: str, record: dict[str, Any]) -> str:
    """A record's ``id``: a string or an integer (``ValueError`` naming ``where`` otherwise)."""
    value = record["id"]
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else require(where, record, "id")


def _letter(where: str, answer: str) -> str:
    """A reference answer as a letter (``"B"``, ``"b"`` or ``"1"`` all give ``"B"``)."""
    answer = answer.strip().upper()
    if answer in {"0", "1", "2", "3"}:
        return LETTERS[int(answer)]
    if answer not in LETTERS:
        raise ValueError(f"{where}: answer must be one of A, B, C, D (or 0-3), got {answer!r}")
    return answer


def _problem(
    problem_id: str, subject: str, question: str, choices: Sequence[str], answer: str
) -> Problem:
    options = "\n".join(
        f"{letter}. {choice}" for letter, choice in zip(LETTERS, choices, strict=True)
    )
    return Problem(
        problem_id,
        f"{question}\n\n{options}",
        answer,
        {"subject": subject, "choices": tuple(choices)},
    )
