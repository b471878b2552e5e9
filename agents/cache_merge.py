"""Merge the SQLite response caches of several nodes into one (``deliberate cache merge``).

A run on Ray workers across machines keeps one cache per node: SQLite over a network file
system (NFS, SMB, most cloud mounts) is unsafe, its locks do not hold across machines and
concurrent writers can corrupt the file, so never point the nodes at one shared file.
Afterwards, :func:`merge_caches` combines the nodes' files into one, for an exact offline
replay of the whole run on any machine.

Nothing wrong is merged. Every row's checksum is verified: a corrupt row, or one written
without a checksum by an older version, is skipped with a warning (its request is just
generated again when replayed online). A row whose checksum holds but whose values no
backend returns (:func:`agents.cache.row_problem`: a token count that is not an integer
>= 0, a finish reason other than "stop" and "length", ...) was not written by this package
as it stands: that is a :class:`CacheRowError` naming the file, the key and what is wrong.
Two intact rows with the same key but different values cannot both be right; that is a
:class:`CacheConflictError` naming the key and the files. After either error the output is
left exactly as it was (one transaction).
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path

from agents.cache import (
    _TABLES,
    _VALUES,
    _column_names,
    _create_or_migrate,
    _intact,
    _open,
    row_problem,
)

_COLUMNS = {table: ("key", *_VALUES[table], "checksum", "model_id", "created") for table in _TABLES}


class CacheConflictError(ValueError):
    """Two caches hold different results for the same request."""


class CacheRowError(ValueError):
    """A cache holds a row with a valid checksum but values that no backend returns."""


def merge_caches(out: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]]) -> dict[str, int]:
    """Add every intact row of ``inputs`` to the cache ``out`` (created if missing).

    Args:
        out: The merged cache; rows it already holds take part in the conflict check.
        inputs: The nodes' caches, read only.

    Returns:
        ``{"added", "duplicates", "skipped"}``: rows added, rows already present with the
        same values, and corrupt or unverifiable rows skipped (each skip also warns).

    Raises:
        ValueError: No input, or an input that is ``out`` itself.
        CacheConflictError: Two rows for one key differ; ``out`` is unchanged.
        CacheRowError: A row's values are invalid; ``out`` is unchanged.
        CacheFileError: A file cannot be read or written (the message names it).
    """
    out = Path(out)
    paths = [Path(path) for path in inputs]
    if not paths:
        raise ValueError("give at least one input cache to merge")
    for path in paths:
        if path.resolve() == out.resolve():
            raise ValueError(f"input {path} is the output cache: name another output file")
    counts = {"added": 0, "duplicates": 0, "skipped": 0}
    with _open(out, read_only=False) as db:
        _create_or_migrate(db)
        db.execute("BEGIN IMMEDIATE")
        try:
            for path in paths:
                with _open(path, read_only=True) as source:
                    for table in _TABLES:
                        _merge_table(db, source, table, path, out, counts)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return counts


def _merge_table(
    db: sqlite3.Connection, source: sqlite3.Connection, table: str, path: Path, out: Path, counts: dict[str, int]
) -> None:
    """Add the intact rows of ``table`` in ``source`` (the file ``path``) to ``db``."""
    columns = _column_names(source, table)
    if not columns:  # a file without this table holds none of its rows
        return
    checksum = "checksum" if "checksum" in columns else "NULL"  # NULL: an older file
    values = ", ".join(_VALUES[table])
    corrupt = 0
    rows = source.execute(f"SELECT key, {values}, {checksum}, model_id, created FROM {table}")
    for key, *row_values, stored, model_id, created in rows:
        if stored is None or not _intact(key, row_values, stored):
            corrupt += 1
            continue
        if problem := row_problem(table, row_values):
            raise CacheRowError(
                f"{path} holds a {table} row with a valid checksum but invalid values, key {key} "
                f"(model {model_id!r}): {problem}; nothing was merged. This package never writes "
                f"such a row: merge without {path}, or delete the row from it"
            )
        held = db.execute(f"SELECT {values} FROM {table} WHERE key = ?", (key,)).fetchone()
        if held is None:
            marks = ", ".join("?" * len(_COLUMNS[table]))
            db.execute(
                f"INSERT INTO {table} ({', '.join(_COLUMNS[table])}) VALUES ({marks})",
                (key, *row_values, stored, model_id, created),
            )
            counts["added"] += 1
        elif list(held) == row_values:
            counts["duplicates"] += 1
        else:
            raise CacheConflictError(
                f"{path} and the caches merged before it (into {out}) hold different {table} for key "
                f"{key} (model {model_id!r}): {row_values!r:.200} against {list(held)!r:.200}; "
                f"nothing was merged. Replay each node from its own cache, or merge without {path}"
            )
    if corrupt:
        warnings.warn(
            f"{path}: skipped {corrupt} {table} rows that failed their checksum or have none "
            "(damaged, or written by an older version); they are generated again when replayed online",
            stacklevel=3,
        )
    counts["skipped"] += corrupt
