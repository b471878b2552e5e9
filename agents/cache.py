"""A persistent response cache for any backend: SQLite, safe with several processes.

:class:`CachedBackend` wraps a backend and is itself a backend. Each batch is looked
up at once; only the misses go to the inner backend, in one batched call per chunk of
``chunk_size`` requests, and each chunk's results are written in one transaction as
soon as it is done, so a run killed mid-way loses nothing already generated (a chunk
whose inner call fails is not written; the chunks before it stay). Requests repeated
within a batch are generated once.

Keys are SHA-256 hashes of

- generations: (model_id, messages, max_tokens, temperature, top_p, seed, stop), and
  ``top_k`` when it is not 0 (so keys of requests without one are those of earlier versions);
- log-probabilities: (model_id, messages, candidates).

A row replays what the backend generated when it was stored, whatever version of the
backend that was: the llama.cpp backend, for one, drew its tokens at the temperature after
top-p until 2026-11-24 (``agents.sampling``), and its rows from before are served as they
were stored (give a run another cache file to keep backend versions apart).

Parameters are normalized first, so equal values give equal keys: numpy scalars become
Python numbers, ``temperature`` and ``top_p`` are floats (``0`` and ``0.0`` are one
key), ``max_tokens``, ``top_k`` and ``seed`` integers; a value that cannot be normalized (a float
seed, a bare string as ``stop``) is a :class:`TypeError` naming the parameter.

Nothing wrong is served. Every row holds a SHA-256 checksum of its key and value; a
row whose checksum does not match (a flipped byte on disk) is a miss with a warning: it
is regenerated and replaced, or, offline, a :class:`CacheMissError` that says the row
was corrupt. Rows written before checksums existed (files of an older version, whose
tables are migrated on first writable use) cannot be verified and are treated the same
way. A backend that returns more or fewer results than requests is a
:class:`~agents.base.BackendError`, and that chunk is not stored.

The database is in WAL mode (readers never block the writer) with a busy timeout, so
several processes (parallel runs, a learner and an evaluator) can share one file.
``offline=True`` opens the file read-only, serves only what is cached and raises
:class:`CacheMissError` for the rest: an exact offline replay, also from read-only
media. A file that cannot be used (not a database, damaged, read-only for an online
run, locked for too long) is a :class:`CacheFileError` naming the file and what to do;
a full disk only warns: the results just generated are returned, uncached.

The file is ``$DELIBERATION_ENV_CACHE`` if that variable is set when this module is
imported, else ``~/.cache/deliberation_env/responses.sqlite``.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import operator
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from agents.base import (
    Backend,
    BackendError,
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    Message,
)

DEFAULT_CACHE_PATH = Path(
    os.environ.get("DELIBERATION_ENV_CACHE")
    or Path.home() / ".cache" / "deliberation_env" / "responses.sqlite"
)
BUSY_TIMEOUT_S = 60.0
"""How long a writer waits for another process's transaction before failing."""
_SQL_VARIABLES = 500  # keys per SELECT ... IN (...), well under SQLite's limit

_TABLES = {
    "generations": "key TEXT PRIMARY KEY, model_id TEXT NOT NULL, text TEXT NOT NULL, "
    "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
    "finish_reason TEXT NOT NULL, created REAL NOT NULL, checksum TEXT",
    "logprobs": "key TEXT PRIMARY KEY, model_id TEXT NOT NULL, logprobs TEXT NOT NULL, "
    "prompt_tokens INTEGER NOT NULL, created REAL NOT NULL, checksum TEXT",
}
_SCHEMA_VERSION = 1  # PRAGMA user_version; 0 in the files of older versions, without checksums
_VALUES = {  # the columns a result is built from, in order; the checksum covers them
    "generations": ("text", "prompt_tokens", "completion_tokens", "finish_reason"),
    "logprobs": ("logprobs", "prompt_tokens"),
}

Request = TypeVar("Request", GenerationRequest, LogprobRequest)
Result = TypeVar("Result", Generation, LogprobResult)


class CacheMissError(BackendError):
    """An offline :class:`CachedBackend` was asked for something it cannot serve: not
    cached, or cached in a row that is corrupt or cannot be verified."""


class CacheFileError(BackendError):
    """The cache file cannot be opened, read or written; the message names the file
    and what to do."""


class CacheFullError(CacheFileError):
    """The disk (or the database's size limit) is full."""


# ------------------------------------------------------------------ the file
@contextmanager
def _open(path: Path, *, read_only: bool) -> Iterator[sqlite3.Connection]:
    """A connection to the cache at ``path``, closed after.

    Writable connections create the file and its directory; read-only ones never
    write (they work on read-only media). Any ``sqlite3`` or OS error, while opening
    or in the ``with`` block, becomes a :class:`CacheFileError` naming the file.
    """
    try:
        connection = _connect_read_only(path) if read_only else _connect_writable(path)
        with closing(connection) as db:
            yield db
    except (sqlite3.Error, OSError) as error:
        raise _file_error(path, error, read_only) from error


def _connect_writable(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        _switch_to_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process loses no commit
    except sqlite3.Error:
        db.close()
        raise
    return db


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another process holds the file for up to
    :data:`BUSY_TIMEOUT_S`: when processes open a new file at once, SQLite reports the
    switch busy at once rather than wait in its busy handler (it would deadlock)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            busy = (error.sqlite_errorcode or 0) & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """Open with ``mode=ro``; on read-only media, where SQLite cannot create the WAL
    index next to the file, open it as ``immutable`` (nobody can be writing to it)."""
    if not path.is_file():
        raise FileNotFoundError(path)
    uri = path.resolve().as_uri()
    try:
        return _checked(sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S))
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_READONLY:
            raise
    return _checked(sqlite3.connect(f"{uri}?immutable=1", uri=True))


def _checked(db: sqlite3.Connection) -> sqlite3.Connection:
    """``db`` once it has read the file's header (connecting alone reads nothing)."""
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        db.close()
        raise
    return db


def _file_error(path: Path, error: sqlite3.Error | OSError, read_only: bool) -> CacheFileError:
    """The error to raise for ``error`` on the cache at ``path``, saying what to do."""
    where = f"response cache {path}"
    if isinstance(error, FileNotFoundError):
        return CacheFileError(
            f"{where} does not exist: check the path, or fill it with offline=False"
        )
    if isinstance(error, OSError):
        return CacheFileError(f"{where} cannot be opened: {error}")
    code = (error.sqlite_errorcode or 0) & 0xFF
    if code == sqlite3.SQLITE_FULL:
        return CacheFullError(
            f"{where}: the disk is full ({error}); free space or use another path"
        )
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return CacheFileError(
            f"{where} is not a SQLite database or is damaged ({error}): move it away (a new "
            f"cache is made on the next run) or salvage it with `sqlite3 {path} .recover`"
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return CacheFileError(
            f"{where} stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s ({error}); "
            "retry when it is done"
        )
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        if read_only:
            return CacheFileError(f"{where} cannot be read ({error}): check that it is readable")
        return CacheFileError(
            f"{where} cannot be written ({error}): make the file and its directory writable, "
            "pass another path, or replay it read-only with offline=True"
        )
    return CacheFileError(f"{where}: {type(error).__name__}: {error}")


def _create_or_migrate(db: sqlite3.Connection) -> None:
    """Create the tables, or add the checksum column to the tables of an older version
    (their rows keep a NULL checksum: they cannot be verified, so they are never served).

    It always writes the schema version, so a file that cannot be written fails here,
    before anything is generated, not when the first results are stored.
    """
    db.execute("BEGIN IMMEDIATE")
    for table, columns in _TABLES.items():
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        if "checksum" not in _column_names(db, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN checksum TEXT")
    db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
    db.execute("COMMIT")


def _column_names(db: sqlite3.Connection, table: str) -> set[str]:
    """The columns of ``table``; empty if there is no such table."""
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


# ----------------------------------------------------------------- the keys
def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _generation_key(model_id: str, request: GenerationRequest) -> str:
    return _key(
        "generate",
        model_id,
        _messages(request.messages),
        _integer("max_tokens", request.max_tokens),
        _real("temperature", request.temperature),
        _real("top_p", request.top_p),
        _integer("seed", request.seed),
        _strings("stop", request.stop),
        # only when set, so that the keys of requests without a top-k are those of earlier versions
        *([["top_k", top_k]] if (top_k := _integer("top_k", request.top_k)) else []),
    )


def _logprob_key(model_id: str, request: LogprobRequest) -> str:
    return _key(
        "logprobs",
        model_id,
        _messages(request.messages),
        _strings("candidates", request.candidates),
    )


def _real(name: str, value: object) -> float:
    """``value`` as a Python float (any int, float or numpy number)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")


def _integer(name: str, value: object) -> int:
    """``value`` as a Python int (any int or numpy integer; not a float)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None


def _strings(name: str, values: object) -> list[str]:
    """``values`` as a list of Python strings (a bare string is refused, not split)."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {values!r}")
    if not all(isinstance(value, str) for value in values):
        raise TypeError(f"{name} must hold only strings, got {values!r}")
    return [str(value) for value in values]


def _messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """``messages`` as plain dicts of strings."""
    for message in messages:
        if not isinstance(message, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in message.items()
        ):
            raise TypeError(f"messages must be dicts of strings, got {message!r:.200}")
    return [{str(k): str(v) for k, v in message.items()} for message in messages]


# ------------------------------------------------------------------ the rows
def _checksum(key: str, values: Sequence[object]) -> str:
    """SHA-256 of a row's key and values (:data:`_VALUES`), as stored and as read back."""
    return hashlib.sha256(json.dumps([key, *values]).encode()).hexdigest()


def _intact(key: str, values: Sequence[object], checksum: str) -> bool:
    """Whether a row read back is what was written (a damaged type, e.g. a text turned
    into a blob, cannot be serialized and is not intact either)."""
    try:
        return _checksum(key, values) == checksum
    except TypeError:
        return False


def _to_values(result: Generation | LogprobResult) -> tuple:
    if isinstance(result, Generation):
        return (result.text, result.prompt_tokens, result.completion_tokens, result.finish_reason)
    return (json.dumps(result.logprobs), result.prompt_tokens)


def _from_values(table: str, values: Sequence[object]) -> Generation | LogprobResult:
    if table == "generations":
        return Generation(*values)
    return LogprobResult(tuple(json.loads(values[0])), values[1])


@dataclass
class _Lookup:
    """What a lookup found: intact results by key, and the keys it could not serve."""

    found: dict[str, Generation | LogprobResult] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    unverified: set[str] = field(default_factory=set)


def _lookup(db: sqlite3.Connection, table: str, keys: Sequence[str]) -> _Lookup:
    """The intact rows of ``keys`` in ``table``; corrupt and unverifiable rows apart."""
    lookup = _Lookup()
    columns = _column_names(db, table)
    if not columns:  # an empty file, opened read-only
        return lookup
    checksum = "checksum" if "checksum" in columns else "NULL"  # NULL: an older file, read-only
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), _SQL_VARIABLES):
        batch = unique[start : start + _SQL_VARIABLES]
        marks = ",".join("?" * len(batch))
        select = f"SELECT key, {checksum}, {', '.join(_VALUES[table])} FROM {table} WHERE key IN ({marks})"
        for key, stored, *values in db.execute(select, batch):
            if stored is None:
                lookup.unverified.add(key)
            elif _intact(key, values, stored):
                lookup.found[key] = _from_values(table, values)
            else:
                lookup.corrupt.add(key)
    return lookup


# ----------------------------------------------------------------- the backend
class CachedBackend:
    """A backend that serves repeated requests from a SQLite file.

    Args:
        backend: The backend that generates cache misses.
        path: The SQLite file (created if missing, unless ``offline``).
        offline: Open the file read-only and serve only cached results; a miss raises
            :class:`CacheMissError`.
        chunk_size: Most misses per inner backend call; each chunk is committed as
            soon as it is generated. None: the backend's ``preferred_chunk`` attribute
            if it has one (a batching backend decodes a whole phase together), else 64 (a
            backend that decodes one request at a time then commits every 64).

    Raises:
        CacheFileError: The file cannot be used (the message says why and what to do).

    Attributes:
        hits: Requests served from the cache since construction.
        misses: Requests sent to the inner backend since construction.
    """

    def __init__(
        self,
        backend: Backend,
        path: str | os.PathLike[str] = DEFAULT_CACHE_PATH,
        *,
        offline: bool = False,
        chunk_size: int | None = None,
    ) -> None:
        if chunk_size is None:
            chunk_size = int(getattr(backend, "preferred_chunk", 64))
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.backend = backend
        self.path = Path(path)
        self.offline = offline
        self.chunk_size = chunk_size
        self.model_id = backend.model_id
        self.supports_logprobs = backend.supports_logprobs
        self.hits = 0
        self.misses = 0
        # Fail now, not in the middle of a run: open (and create or migrate) the file.
        with _open(self.path, read_only=offline) as db:
            if not offline:
                _create_or_migrate(db)

    # ---------------------------------------------------------------- the protocol
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Cached generations; misses generated by the inner backend and stored.

        Raises:
            TypeError: A request parameter cannot be normalized into a key.
        """
        keys = [_generation_key(self.model_id, request) for request in requests]
        return self._serve("generations", keys, requests, self.backend.generate)

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Cached log-probabilities; misses scored by the inner backend and stored.

        Raises:
            TypeError: A request parameter cannot be normalized into a key.
        """
        keys = [_logprob_key(self.model_id, request) for request in requests]
        return self._serve("logprobs", keys, requests, self.backend.next_token_logprobs)

    # --------------------------------------------------------------------- lookup
    def _serve(
        self,
        table: str,
        keys: list[str],
        requests: Sequence[Request],
        produce: Callable[[list[Request]], list[Result]],
    ) -> list[Result]:
        with _open(self.path, read_only=self.offline) as db:
            lookup = _lookup(db, table, keys)
        found = lookup.found
        missing = {
            key: request for key, request in zip(keys, requests, strict=True) if key not in found
        }
        self.hits += len(keys) - sum(key in missing for key in keys)
        self._warn_unservable(lookup)
        if missing and self.offline:
            raise self._offline_miss(lookup, missing, len(keys))
        pending = list(missing.items())
        for start in range(0, len(pending), self.chunk_size):
            chunk = pending[start : start + self.chunk_size]
            results = produce([request for _, request in chunk])
            self.misses += len(chunk)
            if len(results) != len(chunk):
                raise BackendError(
                    f"backend {self.model_id} ({self.backend!r}) returned {len(results)} "
                    f"results for {len(chunk)} requests; none of them was cached"
                )
            chunk_keys = [key for key, _ in chunk]
            self._store(table, chunk_keys, results)
            found.update(zip(chunk_keys, results, strict=True))
        return [found[key] for key in keys]

    def _store(self, table: str, keys: list[str], results: list[Result]) -> None:
        """Write one chunk in one transaction; on a full disk, warn and keep going."""
        now = time.time()
        rows = []
        for key, result in zip(keys, results, strict=True):
            values = _to_values(result)
            rows.append((key, *values, _checksum(key, values), self.model_id, now))
        columns = ("key", *_VALUES[table], "checksum", "model_id", "created")
        insert = (
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})"
        )
        try:
            with _open(self.path, read_only=False) as db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(insert, rows)
                db.execute("COMMIT")
        except CacheFullError as error:
            warnings.warn(
                f"{error}. {len(rows)} results of {self.model_id} just generated are "
                "returned but not cached",
                RuntimeWarning,
                stacklevel=4,
            )

    def _warn_unservable(self, lookup: _Lookup) -> None:
        """One warning per kind of row that was found but cannot be served."""
        if lookup.corrupt:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.corrupt)} rows of {self.model_id} "
                "failed their checksum (the file is damaged); they are not served"
                + ("" if self.offline else " but regenerated and replaced"),
                RuntimeWarning,
                stacklevel=4,
            )
        if lookup.unverified:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.unverified)} rows of {self.model_id} "
                "were written by an older version without a checksum and cannot be verified; "
                "they are not served" + ("" if self.offline else " but regenerated and replaced"),
                RuntimeWarning,
                stacklevel=4,
            )

    def _offline_miss(
        self, lookup: _Lookup, missing: dict[str, Request], total: int
    ) -> CacheMissError:
        reasons = [
            f"{count} {why}"
            for count, why in (
                (len(missing) - len(lookup.corrupt) - len(lookup.unverified), "not cached"),
                (len(lookup.corrupt), "cached in a corrupt row (checksum mismatch)"),
                (len(lookup.unverified), "cached without a checksum by an older version"),
            )
            if count
        ]
        first = next(iter(missing.values()))
        return CacheMissError(
            f"offline cache {self.path}: {len(missing)} of {total} requests of {self.model_id} "
            f"cannot be served: {', '.join(reasons)} (first: {_describe(first)}); run once "
            "with offline=False to generate them"
        )

    def __repr__(self) -> str:
        return f"CachedBackend({self.backend!r}, path={str(self.path)!r}, offline={self.offline})"


def _describe(request: GenerationRequest | LogprobRequest) -> str:
    fields = asdict(request)
    last = fields.pop("messages")[-1]["content"]
    return f"{fields}, last message {last[:80]!r}"


# ------------------------------------------------------------ CLI helpers
def cache_stats(path: str | os.PathLike[str] = DEFAULT_CACHE_PATH) -> dict:
    """What the cache at ``path`` holds (``deliberate cache stats``); reads only.

    Returns:
        ``{"path", "exists", "size_bytes", "generations", "logprobs", "prompt_tokens",
        "completion_tokens", "models": {model_id: rows}}``; counts are 0 for a missing file.

    Raises:
        CacheFileError: The file cannot be read (the message says why and what to do).
    """
    path = Path(path)
    stats = {
        "path": str(path),
        "exists": path.exists(),
        "size_bytes": 0,
        "generations": 0,
        "logprobs": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "models": {},
    }
    if not path.exists():
        return stats
    with _open(path, read_only=True) as db:
        if _column_names(db, "generations") and _column_names(db, "logprobs"):
            stats["generations"], stats["prompt_tokens"], stats["completion_tokens"] = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), "
                "COALESCE(SUM(completion_tokens), 0) FROM generations"
            ).fetchone()
            stats["logprobs"] = db.execute("SELECT COUNT(*) FROM logprobs").fetchone()[0]
            models = db.execute(
                "SELECT model_id, COUNT(*) FROM (SELECT model_id FROM generations UNION ALL "
                "SELECT model_id FROM logprobs) GROUP BY model_id ORDER BY model_id"
            )
            stats["models"] = dict(models.fetchall())
    stats["size_bytes"] = sum(
        p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
    )
    return stats


def cache_clear(path: str | os.PathLike[str] = DEFAULT_CACHE_PATH) -> int:
    """Delete every cached row at ``path`` (``deliberate cache clear``); return how many.

    Rows are deleted in one transaction (other processes using the file stay safe) and
    the file is compacted. A missing file is left missing.

    Raises:
        CacheFileError: The file cannot be written (the message says why and what to do).
    """
    path = Path(path)
    if not path.exists():
        return 0
    with _open(path, read_only=False) as db:
        _create_or_migrate(db)
        db.execute("BEGIN IMMEDIATE")
        removed = sum(db.execute(f"DELETE FROM {table}").rowcount for table in _TABLES)
        db.execute("COMMIT")
        db.execute("VACUUM")
    return removed
