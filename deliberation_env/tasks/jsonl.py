"""Question/answer JSONL files: the ``jsonl`` task and the reader GSM8K shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import Problem, check_split
from deliberation_env.tasks.numeric import NUMERIC_INSTRUCTIONS, canonical_number, extract_number

TEXT_INSTRUCTIONS = "Think step by step. End with a line of the form 'Answer: X'."


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On a line that is not a JSON object, naming ``path:line``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no such JSONL file: {path}")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")  # noqa: TRY004 (bad data, not a bad argument)
            yield number, record


def field(path: Path, number: int, record: dict[str, Any], name: str) -> str:
    """The string field ``name`` of a record, or a ``ValueError`` naming ``path:line``."""
    if name not in record:
        raise ValueError(f"{path}:{number}: missing field {name!r} (fields: {', '.join(record)})")
    return str(record[name])


def split_files(path: str | Path, split: str) -> Path:
    """The file of ``split``: ``path`` itself if a file, else ``path/<split>.jsonl``."""
    path = Path(path)
    return path if path.is_file() else path / f"{check_split(split)}.jsonl"


def load_problems(
    path: Path, prefix: str, question_field: str, answer_of: Callable[[Path, int, dict[str, Any]], str]
) -> tuple[Problem, ...]:
    """Read problems from a JSONL file; ``answer_of`` extracts the reference decision."""
    return tuple(
        Problem(f"{prefix}-{index}", field(path, number, record, question_field), answer_of(path, number, record))
        for index, (number, record) in enumerate(read_jsonl(path))
    )


def canonical_text(text: str) -> str:
    """Case- and space-insensitive form of a short text answer."""
    return " ".join(text.strip().rstrip(".").split()).casefold()


class JSONLTask:
    """Any JSONL file of questions and answers.

    Numeric answers (every reference parses as a number) are compared as numbers;
    otherwise answers are short texts compared case- and space-insensitively, read from
    an ``Answer: X`` line of the model's text.

    Args:
        path: A JSONL file (used for both splits) or a directory with ``train.jsonl``
            and ``test.jsonl``.
        question_field: Name of the question field.
        answer_field: Name of the answer field.
    """

    name = "jsonl"

    def __init__(self, path: str | Path, question_field: str = "question", answer_field: str = "answer") -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no such file or directory: {self.path}")
        self.question_field, self.answer_field = question_field, answer_field
        self._cache: dict[str, tuple[Problem, ...]] = {}
        self.numeric = all(canonical_number(p.answer) is not None for p in self._load("test"))
        self.instructions = NUMERIC_INSTRUCTIONS if self.numeric else TEXT_INSTRUCTIONS

    def _load(self, split: str) -> tuple[Problem, ...]:
        if split not in self._cache:
            file = split_files(self.path, split)
            self._cache[split] = load_problems(
                file, f"{file.stem}-{split}", self.question_field,
                lambda p, n, r: field(p, n, r, self.answer_field),
            )
        return self._cache[split]

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split``, answers in canonical form."""
        return tuple(
            Problem(p.id, p.question, self._canonical(p.answer), p.meta) for p in self._load(check_split(split))
        )

    def _canonical(self, answer: str) -> str:
        return canonical_number(answer) if self.numeric else canonical_text(answer)

    def parse(self, problem: Problem, text: str) -> str | None:
        """The number (numeric tasks) or the text after the last ``Answer:``."""
        if self.numeric:
            return extract_number(text)
        marker = text.lower().rfind("answer:")
        if marker < 0:
            return None
        return canonical_text(text[marker + len("answer:"):].split("\n")[0]) or None

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Exact match of canonical answers."""
        return decision is not None and decision == problem.answer

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """Canonical answers agree when they are equal strings."""
        return decision
