"""Where benchmark records come from, how they are read, and the fixed split of single-split sources.

A *source* is one of:

- a directory holding ``train.jsonl`` and ``test.jsonl`` (the source's own splits, kept
  as they are);
- one JSONL file: its records are split by :func:`hash_split` of a per-task key (the
  normalized problem text, see :func:`question_key`, or a real problem id), so the
  split is fixed, disjoint, independent of the file's order, and duplicates of a
  problem land in the same split;
- a Hugging Face dataset id, optionally ``"id:config"`` (e.g. ``"cais/mmlu:all"``), when
  the ``datasets`` package is installed and the hub (or its cache) can be reached. Its
  ``train`` and ``test`` splits are used if it has both (with no ``train``, its ``dev``
  and ``validation`` splits form ``train``), otherwise its only split is hash-split like
  a single file.

Data files are UTF-8 (a leading byte-order mark is allowed). Records come with *where*
they were read (``"path:line"``, or ``"id[split]:row"``), which every error about a
record names: text that is not UTF-8, a line that is not one JSON object (``NaN``,
``Infinity`` and repeated keys included), a missing, ``null``, empty or mistyped field.
A file with no record at all is an error too, naming the file.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import Problem, check_split

TEST_FRACTION = 0.5
"""Share of a single-split source's problems that :func:`hash_split` puts in ``test``."""

Record = tuple[str, dict[str, Any]]
"""A record and where it was read (``"path:line"``)."""


def hash_split(key: str, test_fraction: float = TEST_FRACTION) -> str:
    """The split (``"train"`` or ``"test"``) of a problem in a single-split source.

    The first 8 bytes of SHA-256(``key``), read as a fraction of 2**64, below
    ``test_fraction`` mean ``"test"``.

    >>> hash_split("What is 1 + 1?"), hash_split("What is 3 + 3?")
    ('test', 'train')
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "test" if int.from_bytes(digest[:8], "big") < test_fraction * 2**64 else "train"


def question_key(text: str) -> str:
    """The normalized form of a problem text that :func:`hash_split` places: runs of
    whitespace made single spaces, case folded, so copies that differ only in spacing or
    case share a split.

    >>> question_key("  What  IS 1 + 1? ") == question_key("what is 1 + 1?")
    True
    """
    return " ".join(text.split()).casefold()


def read_text(path: Path) -> str:
    """The text of a UTF-8 data file, without a leading byte-order mark.

    Raises:
        ValueError: If the file is not UTF-8, naming ``path:line`` of the first bad byte.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{path}:{line}: not UTF-8 text (byte {data[error.start]:#04x}); data files must be UTF-8"
        ) from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On text that is not UTF-8 or a line that is not one JSON object
            (``NaN``, ``Infinity`` and a key given twice count as invalid), naming ``path:line``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no such JSONL file: {path}")
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_object, parse_constant=_reject_constant)
        except ValueError as error:  # json.JSONDecodeError is a ValueError, as are the hooks'
            reason = error.msg if isinstance(error, json.JSONDecodeError) else error
            raise ValueError(f"{path}:{number}: not valid JSON ({reason})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")  # noqa: TRY004 (bad data, not a bad argument)
        yield number, record


def read_records(path: Path) -> list[Record]:
    """The records of a JSONL file, each with where it was read (``"path:line"``).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: As :func:`read_jsonl`, and if the file holds no record at all (empty,
            or only blank lines), naming ``path``.
    """
    records = [(f"{path}:{line}", record) for line, record in read_jsonl(path)]
    if not records:
        raise ValueError(
            f"{path}: no records (the file is empty or holds only blank lines); a data file "
            "holds one JSON object per line"
        )
    return records


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (JSON would silently keep the last)."""
    repeated = [key for key, count in Counter(key for key, _ in pairs).items() if count > 1]
    if repeated:
        raise ValueError(f"key {', '.join(map(repr, repeated))} given more than once")
    return dict(pairs)


def _reject_constant(name: str) -> Any:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which Python's ``json`` accepts."""
    raise ValueError(f"{name} is not a JSON number")


def require(where: str, record: dict[str, Any], name: str) -> str:
    """The text field ``name`` of a record: a non-empty string.

    Raises:
        ValueError: Naming ``where`` and the field if it is missing, ``null``, not a
            string or only whitespace.
    """
    value = _present(where, record, name)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {name!r} must be a string, got {type(value).__name__} {value!r}")  # noqa: TRY004 (bad data, not a bad argument)
    if not value.strip():
        raise ValueError(f"{where}: field {name!r} is empty")
    return value


def require_answer(where: str, record: dict[str, Any], name: str) -> str:
    """The answer field ``name`` of a record as text: a non-empty string, or a finite
    JSON number (``204`` gives ``"204"``).

    Raises:
        ValueError: Naming ``where`` and the field if it is missing, ``null``, a boolean,
            a list or object, a non-finite number, or an empty string.
    """
    value = _present(where, record, name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError(f"{where}: field {name!r} must be a finite number, got {value!r}")
        return str(value)
    return require(where, record, name)


def optional_text(where: str, record: dict[str, Any], name: str) -> str | None:
    """The optional text field ``name``: ``None`` if absent or ``null``, else as :func:`require`."""
    return None if record.get(name) is None else require(where, record, name)


def _present(where: str, record: dict[str, Any], name: str) -> Any:
    if name not in record:
        raise ValueError(f"{where}: missing field {name!r} (fields: {', '.join(map(str, record))})")
    if record[name] is None:
        raise ValueError(f"{where}: field {name!r} is null")
    return record[name]


def check_unique_ids(splits: Mapping[str, Sequence[tuple[str, Problem]]]) -> None:
    """Refuse a problem id used twice in a task (within or across splits).

    Args:
        splits: For each split, its problems with where each was read.

    Raises:
        ValueError: Naming both places that hold the repeated id.
    """
    first: dict[str, str] = {}
    for located in splits.values():
        for where, problem in located:
            if problem.id in first:
                raise ValueError(
                    f"{where}: problem id {problem.id!r} is already used at {first[problem.id]}; "
                    "ids must be unique within a task"
                )
            first[problem.id] = where


def load_split(
    source: str | Path,
    split: str,
    key: Callable[[str, dict[str, Any]], str],
    test_fraction: float = TEST_FRACTION,
    place: Callable[[str, dict[str, Any]], str | None] | None = None,
) -> list[Record]:
    """The records of ``split`` from ``source`` (see the module docstring).

    Args:
        source: A directory, a JSONL file, or a Hugging Face dataset id.
        split: ``"train"`` or ``"test"``.
        key: ``key(where, record)``: the string that places a record of a single-split
            source in a split (it raises ``ValueError`` naming ``where`` on a bad record).
        test_fraction: The share of a single-split source's records placed in ``test``
            (:func:`hash_split`).
        place: ``place(where, record)``: the split of a record of a single-split source
            (``None``: in neither), instead of the hash of its key.

    Raises:
        FileNotFoundError: If ``source`` is not a path and cannot be a dataset id.
        ValueError: On a malformed record (naming ``path:line``) or an unknown split.
    """
    check_split(split)
    path = Path(source)
    if path.is_dir():
        file = path / f"{split}.jsonl"
        if not file.is_file():
            raise FileNotFoundError(f"{path} is a directory but has no {split}.jsonl")
        return read_records(file)
    if path.is_file():
        records = read_records(path)
    else:
        splits = _hub_splits(str(source))
        held_out = [record for name in ("dev", "validation") for record in splits.get(name, [])]
        if "train" not in splits and "test" in splits and held_out:
            splits["train"] = held_out  # e.g. MMLU: few-shot and validation questions
        if "train" in splits and "test" in splits:
            return splits[split]
        if len(splits) != 1:
            raise ValueError(f"dataset {source!r} has splits {sorted(splits)}, not train and test")
        records = next(iter(splits.values()))
    if place is None:
        return [(where, record) for where, record in records if hash_split(key(where, record), test_fraction) == split]
    return [(where, record) for where, record in records if place(where, record) == split]


def _hub_splits(dataset_id: str) -> dict[str, list[Record]]:
    """Every split of a Hugging Face dataset, as records (``datasets`` is optional)."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise FileNotFoundError(
            f"no such file or directory: {dataset_id} (to load it as a Hugging Face dataset id "
            "install the optional `datasets` package: pip install 'deliberation-env[hf]')"
        ) from None
    name, _, config = dataset_id.partition(":")
    try:
        loaded = datasets.load_dataset(name, config or None)
    except Exception as error:  # the hub's errors vary by version and cause
        raise FileNotFoundError(
            f"{dataset_id!r} is neither a local path nor a loadable Hugging Face dataset: {error}"
        ) from error
    return {
        split: [(f"{dataset_id}[{split}]:{row}", dict(record)) for row, record in enumerate(rows)]
        for split, rows in loaded.items()
    }
