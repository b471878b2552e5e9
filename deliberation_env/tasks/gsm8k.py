"""GSM8K: grade-school math word problems from local JSONL files.

Each line has ``question`` and ``answer``; the reference is the number after ``####``.
"1,000", "$18" and "18.0" are all canonicalised (18, 1000, ...), so equal numbers agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import Problem, check_split
from deliberation_env.tasks.jsonl import field, load_problems, split_files
from deliberation_env.tasks.numeric import NumericTask, canonical_number


def _reference(path: Path, number: int, record: dict[str, Any]) -> str:
    answer = field(path, number, record, "answer")
    if "####" not in answer:
        raise ValueError(f"{path}:{number}: answer has no '#### <number>' line")
    reference = canonical_number(answer.rsplit("####", 1)[1])
    if reference is None:
        raise ValueError(f"{path}:{number}: the text after '####' is not a number: {answer.rsplit('####', 1)[1]!r}")
    return reference


class GSM8KTask(NumericTask):
    """GSM8K from a directory with ``train.jsonl`` and ``test.jsonl`` (or one file).

    Args:
        path: The directory (or a single JSONL file used for both splits).
        limit: Keep only the first ``limit`` problems of each split (``None``: all).
    """

    name = "gsm8k"

    def __init__(self, path: str | Path, limit: int | None = None) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no such file or directory: {self.path} (GSM8K needs a local copy)")
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValueError(f"limit must be None or an integer >= 1, got {limit!r}")
        self.limit = limit
        self._cache: dict[str, tuple[Problem, ...]] = {}

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split`` (first ``limit`` only, if set)."""
        if check_split(split) not in self._cache:
            self._cache[split] = load_problems(split_files(self.path, split), f"gsm8k-{split}", "question", _reference)
        return self._cache[split][: self.limit]
