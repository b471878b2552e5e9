"""Where benchmark records come from, and the fixed split of single-split sources.

A *source* is one of:

- a directory holding ``train.jsonl`` and ``test.jsonl`` (the source's own splits);
- one JSONL file: its records are split by :func:`hash_split` of a per-task key (the
  problem text, or the problem id), so the split is fixed, disjoint, independent of
  the file's order, and duplicates of a problem land in the same split;
- a Hugging Face dataset id, optionally ``"id:config"`` (e.g. ``"cais/mmlu:all"``), when
  the ``datasets`` package is installed and the hub (or its cache) can be reached. Its
  ``train`` and ``test`` splits are used if it has both (with no ``train``, its ``dev``
  and ``validation`` splits form ``train``), otherwise its only split is hash-split like
  a single file.

Records come with *where* they were read (``"path:line"``, or ``"id[split]:row"``), which
every error about a record names.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deliberation_env.tasks.base import check_split
from deliberation_env.tasks.jsonl import read_jsonl

TEST_FRACTION = 0.5
"""Share of a single-split source's problems that :func:`hash_split` puts in ``test``."""

Record = tuple[str, dict[str, Any]]
"""A record and where it was read (``"path:line"``)."""


def hash_split(key: str) -> str:
    """The split (``"train"`` or ``"test"``) of a problem in a single-split source.

    The first 8 bytes of SHA-256(``key``), read as a fraction of 2**64, below
    :data:`TEST_FRACTION` mean ``"test"``.

    >>> hash_split("What is 1 + 1?"), hash_split("What is 3 + 3?")
    ('test', 'train')
    """
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "test" if int.from_bytes(digest[:8], "big") < TEST_FRACTION * 2**64 else "train"


def require(where: str, record: dict[str, Any], name: str) -> str:
    """The field ``name`` of a record as a string; a ``ValueError`` naming ``where`` if absent."""
    if name not in record or record[name] is None:
        raise ValueError(f"{where}: missing field {name!r} (fields: {', '.join(map(str, record))})")
    return str(record[name])


def load_split(
    source: str | Path, split: str, key: Callable[[str, dict[str, Any]], str]
) -> list[Record]:
    """The records of ``split`` from ``source`` (see the module docstring).

    Args:
        source: A directory, a JSONL file, or a Hugging Face dataset id.
        split: ``"train"`` or ``"test"``.
        key: ``key(where, record)``: the string that places a record of a single-split
            source in a split (it raises ``ValueError`` naming ``where`` on a bad record).

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
        return [(f"{file}:{line}", record) for line, record in read_jsonl(file)]
    if path.is_file():
        records = [(f"{path}:{line}", record) for line, record in read_jsonl(path)]
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
    return [(where, record) for where, record in records if hash_split(key(where, record)) == split]


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
