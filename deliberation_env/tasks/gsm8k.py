"""GSM8K: grade-school math word problems (Cobbe et al., 2021).

Each record has ``question`` and ``answer``; the reference is the number after ``####``.
"1,000", "$18" and "18.0" are all canonicalised (18, 1000, ...), so equal numbers agree.

``path`` is a directory with ``train.jsonl`` and ``test.jsonl`` (the release's layout,
kept as its split; one of the two is enough for the split it holds), a single JSONL file
(split deterministically by a hash of each question's normalized text,
:func:`~deliberation_env.tasks.sources.hash_split` of
:func:`~deliberation_env.tasks.sources.question_key`, so copies of a question land in the
same split and the test split is never trained on), ``"hf:openai/gsm8k:main"`` (the
dataset on the Hugging Face hub), or ``"sample"`` (8 problems of each split ship with the
package). Where to get it and its exact format: ``docs/data.md``.

A model's answer is read as the prompt asks, "The answer is N." (``scoring="strict"``,
the default), or as the last number anywhere in its text (``"lenient"``); see
:mod:`deliberation_env.tasks.numeric`. The dataset's own "#### N" is not the asked form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import Problem, check_scoring, positive_int
from deliberation_env.tasks.numeric import NumericTask, canonical_number
from deliberation_env.tasks.sources import (
    TEST_FRACTION,
    SplitsFromSource,
    load_splits,
    question_key,
    require,
    resolve_source,
)


def _reference(where: str, record: dict[str, Any]) -> str:
    """The number after the last ``####`` of the record's answer."""
    answer = require(where, record, "answer")
    if "####" not in answer:
        raise ValueError(f"{where}: answer has no '#### <number>' line")
    reference = canonical_number(answer.rsplit("####", 1)[1])
    if reference is None:
        raise ValueError(f"{where}: the text after '####' is not a number: {answer.rsplit('####', 1)[1]!r}")
    return reference


class GSM8KTask(SplitsFromSource, NumericTask):
    """GSM8K's grade-school word problems, from a folder, one JSONL file, a Hugging Face dataset or the sample.

    Ids are ``gsm8k-<split>-<index in split>``.

    Args:
        path: The directory (its own split), a single JSONL file (hash-split by
            question), ``"hf:<dataset>[:<config>]"`` or ``"sample"`` (see the module docstring).
        limit: Keep only the first ``limit`` problems of each split (``None``: all); an
            integer >= 1 (NumPy integers too).
        scoring: ``"strict"`` or ``"lenient"`` (see the module docstring).
        test_fraction: The share of a single file's questions placed in ``test``.

    Raises:
        FileNotFoundError: If ``path`` does not exist (saying what it accepts).
        ValueError: On a bad ``limit``, ``scoring`` or ``test_fraction``, or a malformed
            record (naming ``path:line``).
    """

    name = "gsm8k"

    def __init__(
        self, path: str | Path, limit: int | None = None, scoring: str = "strict", test_fraction: float = TEST_FRACTION
    ) -> None:
        self.scoring = check_scoring(scoring)
        self.test_fraction = test_fraction
        self.path = resolve_source(self.name, path)
        self.limit = None if limit is None else positive_int("limit", limit)
        located = load_splits(self.path, lambda where, r: question_key(require(where, r, "question")), test_fraction)
        self._problems = {
            split: tuple(
                Problem(f"gsm8k-{split}-{index}", require(where, record, "question"), _reference(where, record))
                for index, (where, record) in enumerate(records)
            )[: self.limit]
            for split, records in located.items()
        }
