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
>= 0, a finish reason other than "stop" and "length", ...), or that is over
:data:`agents.cache.MAX_ROW_CHARS`, was not written by this package as it stands: that is
a :class:`CacheRowError` naming the file, the key and what is wrong. Two servable rows with
the same key but different values cannot both be right; that is a
:class:`CacheConflictError` naming the key and the files. After either error the output is
left exactly as it was (one transaction).

Nothing foreign is merged unless trusted (:mod:`agents.cache`: who wrote a row). A row
signed with this install's key is merged as it is. A foreign row (no valid MAC: another
machine's, an older version's, or planted) is skipped with a warning unless the inputs are
trusted (``trust=True``, ``deliberate cache merge --trust``): then it is re-signed with this
install's key and marked with the file it came from, and served like a row of this
install; ``deliberate cache stats`` counts such rows by file. A foreign row of ``out`` is
replaced by a servable row of the same key. Each node of a Ray run signs with its own key,
so its file is foreign on the driver: merge the nodes' files with ``--trust`` (they are
yours), or give the nodes one key file (``DELIBERATION_ENV_CACHE_KEY``).
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.cache import (
    _TABLES,
    _VALUES,
    FOREIGN,
    MAX_ROW_CHARS,
    _column_names,
    _create_or_migrate,
    _intact,
    _open,
    mac,
    row_problem,
    row_select,
    row_size,
    signed,
    signing_key,
)

_COLUMNS = {table: ("key", *_VALUES[table], "checksum", "mac", "origin", "model_id", "created") for table in _TABLES}


class CacheConflictError(ValueError):
    """Two caches hold different results for the same request."""


class CacheRowError(ValueError):
    """A cache holds a row with a valid checksum but values that no backend returns."""


def merge_caches(
    out: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]], *, trust: bool = False
) -> dict[str, int]:
    """Add every intact row of ``inputs`` to the cache ``out`` (created if missing): those
    signed with this install's key, and with ``trust`` the foreign ones, re-signed.

    Args:
        out: The merged cache; rows it already holds take part in the conflict check.
        inputs: The nodes' caches, read only.
        trust: Trust every input: its foreign rows are re-signed with this install's key,
            marked with the file they came from, and served from ``out``. Only for files
            you trust: anyone who could write them decides what their requests return.

    Returns:
        ``{"added", "duplicates", "skipped", "trusted", "foreign"}``: rows added (of them,
        ``trusted`` came from trusted foreign files), rows already present with the same
        values, corrupt or unverifiable rows skipped, and foreign rows skipped for want of
        ``trust`` (each skip also warns).

    Raises:
        ValueError: No input, or an input that is ``out`` itself.
        CacheConflictError: Two rows for one key differ; ``out`` is unchanged.
        CacheRowError: A row's values are invalid or oversized; ``out`` is unchanged.
        CacheFileError: A file cannot be read or written (the message names it).
        CacheKeyError: This install's signing key cannot be made or read.
    """
    out = Path(out)
    paths = [Path(path) for path in inputs]
    if not paths:
        raise ValueError("give at least one input cache to merge")
    for path in paths:
        same = path.resolve() == out.resolve() or (path.exists() and out.exists() and os.path.samefile(path, out))
        if same:  # by its path, a link, or another name of the same file (a hard link)
            raise ValueError(f"input {path} is the output cache: name another output file")
    made_here = not out.exists()
    try:
        return _merge(out, paths, trust)
    except BaseException:
        if made_here:  # a merge that failed leaves no empty output behind
            out.unlink(missing_ok=True)
        raise


def _merge(out: Path, paths: Sequence[Path], trust: bool) -> dict[str, int]:
    """:func:`merge_caches` once its arguments are checked."""
    counts = {"added": 0, "duplicates": 0, "skipped": 0, "trusted": 0, "foreign": 0}
    merge = _Merge(out, signing_key(), trust, counts)
    with _open(out, read_only=False) as db:
        _create_or_migrate(db)
        db.execute("BEGIN IMMEDIATE")
        try:
            for path in paths:
                with _open(path, read_only=True) as source:
                    for table in _TABLES:
                        merge.table(db, source, table, path)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return counts


@dataclass
class _Merge:
    """One merge into ``out``: rows are checked with this install's key ``secret``;
    ``trust`` re-signs foreign rows; ``counts`` are :func:`merge_caches`' report."""

    out: Path
    secret: bytes
    trust: bool
    counts: dict[str, int]

    def table(self, db: sqlite3.Connection, source: sqlite3.Connection, table: str, path: Path) -> None:
        """Add the intact rows of ``table`` in ``source`` (the file ``path``) to ``db``."""
        columns = _column_names(source, table)
        if not columns:  # a file without this table holds none of its rows
            return
        corrupt = foreign = 0
        for key, size, *values, stored, tag, origin, model_id, created in source.execute(row_select(table, columns)):
            size = row_size(size, values[0])
            if size > MAX_ROW_CHARS:
                raise CacheRowError(
                    f"{path} holds a {table} row of {size:,} characters, over the {MAX_ROW_CHARS:,} any row may "
                    f"hold, key {key} (model {model_id!r}); nothing was merged. This package never writes such a "
                    f"row: merge without {path}, or delete the row from it"
                )
            if stored is None or not _intact(key, values, stored):
                corrupt += 1
                continue
            if problem := row_problem(table, values):
                raise CacheRowError(
                    f"{path} holds a {table} row with a valid checksum but invalid values, key {key} "
                    f"(model {model_id!r}): {problem}; nothing was merged. This package never writes "
                    f"such a row: merge without {path}, or delete the row from it"
                )
            trusted = not signed(self.secret, table, key, model_id, origin, values, tag)
            if trusted and not self.trust:
                foreign += 1
                continue
            if trusted:
                origin = str(path.resolve())
                tag = mac(self.secret, table, key, model_id, origin, values)
            if self._add(db, table, path, (key, *values, stored, tag, origin, model_id, created)):
                self.counts["trusted"] += trusted
        if corrupt:
            warnings.warn(
                f"{path}: skipped {corrupt} {table} rows that failed their checksum or have none "
                "(damaged, or written by an older version); they are generated again when replayed online",
                stacklevel=4,
            )
        if foreign:
            warnings.warn(
                f"{path}: skipped {foreign} foreign {table} rows ({FOREIGN}); if you trust {path}, merge it "
                "with --trust (trust=True); else they are generated again when replayed online",
                stacklevel=4,
            )
        self.counts["skipped"] += corrupt
        self.counts["foreign"] += foreign

    def _add(self, db: sqlite3.Connection, table: str, path: Path, row: tuple) -> bool:
        """Insert ``row`` (the columns of :data:`_COLUMNS`) and return True, unless ``db``
        serves the same values for its key (False); a foreign row of ``db`` is replaced."""
        key, *values = row[: 1 + len(_VALUES[table])]
        held = db.execute(f"{row_select(table, _column_names(db, table))} WHERE key = ?", (key,)).fetchone()
        if held is not None:
            _, _, *held_values, _, tag, origin, model_id, _ = held
            if signed(self.secret, table, key, model_id, origin, held_values, tag):  # an oversized text is None
                if held_values == values:
                    self.counts["duplicates"] += 1
                    return False
                raise CacheConflictError(
                    f"{path} and the caches merged before it (into {self.out}) hold different {table} for key "
                    f"{key} (model {row[-2]!r}): {values!r:.200} against {held_values!r:.200}; "
                    f"nothing was merged. Replay each node from its own cache, or merge without {path}"
                )
        marks = ", ".join("?" * len(_COLUMNS[table]))
        db.execute(f"INSERT OR REPLACE INTO {table} ({', '.join(_COLUMNS[table])}) VALUES ({marks})", row)
        self.counts["added"] += 1
        return True
