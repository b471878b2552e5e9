"""GSM8K: grade-school math word problems from local JSONL files.

Each line has ``question`` and ``answer``; the reference is the number after ``####``.
"1,000", "$18" and "18.0" are all canonicalised (18, 1000, ...), so equal numbers agree.

A directory with ``train.jsonl`` and ``test.jsonl`` (the release's layout) keeps its own
split. A single file is split deterministically, half and half, by a hash of each
question's normalized text (:func:`~deliberation_env.tasks.sources.hash_split` of
:func:`~deliberation_env.tasks.sources.question_key`), so copies of a question land in
the same split and the test split is never trained on.

A model's answer is read as the prompt asks, "The answer is N." (``scoring="strict"``,
the default), or as the last number anywhere in its text (``"lenient"``); see
:mod:`deliberation_env.tasks.numeric`. The dataset's own "#### N" is not the asked form.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import SPLITS, Problem, check_scoring, check_split, positive_int
from deliberation_env.tasks.numeric import NumericTask, canonical_number
from deliberation_env.tasks.sources import TEST_FRACTION, load_split, question_key, require


def _reference(where: str, record: dict[str, Any]) -> str:
    """The number after the last ``####`` of the record's answer."""
    answer = require(where, record, "answer")
    if "####" not in answer:
        raise ValueError(f"{where}: answer has no '#### <number>' line")
    reference = canonical_number(answer.rsplit("####", 1)[1])
    if reference is None:
        raise ValueError(f"{where}: the text after '####' is not a number: {answer.rsplit('####', 1)[1]!r}")
    return reference


class GSM8KTask(NumericTask):
    """GSM8K from a directory with ``train.jsonl`` and ``test.jsonl`` (or one file).

    Ids are ``gsm8k-<split>-<index in split>``.

    Args:
        path: The directory (its own split) or a single JSONL file (hash-split by
            question, see the module docstring).
        limit: Keep only the first ``limit`` problems of each split (``None``: all); an
            integer >= 1 (NumPy integers too).
        scoring: ``"strict"`` or ``"lenient"`` (see the module docstring).
        test_fraction: The share of a single file's questions placed in ``test``.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On a bad ``limit`` or ``scoring``, or a malformed record (naming ``path:line``).
    """

    name = "gsm8k"

    def __init__(
        self, path: str | Path, limit: int | None = None, scoring: str = "strict", test_fraction: float = TEST_FRACTION
    ) -> None:
        self.scoring = check_scoring(scoring)
        self.test_fraction = test_fraction
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no such file or directory: {self.path} (GSM8K needs a local copy)")
        self.limit = None if limit is None else positive_int("limit", limit)
        self._problems = {split: self._load(split) for split in SPLITS}

    def _load(self, split: str) -> tuple[Problem, ...]:
        """Every problem of ``split``, in file order."""
        records = load_split(
            self.path, split, lambda where, r: question_key(require(where, r, "question")), self.test_fraction
        )
        return tuple(
            Problem(f"gsm8k-{split}-{index}", require(where, record, "question"), _reference(where, record))
            for index, (where, record) in enumerate(records)
        )

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split`` (first ``limit`` only, if set)."""
        return self._problems[check_split(split)][: self.limit]
