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

A row is served only to the model that made it: ``model_id`` names the model by its bytes
(local models: a SHA-256 of their files, :mod:`agents.fingerprint`; a server: its model
name and URL). Rows of older versions, whose ids named a model by its file name alone,
are never served (an offline miss says so: regenerate them with ``offline=False``).

Parameters are normalized first, so equal values give equal keys: numpy scalars become
Python numbers, ``temperature`` and ``top_p`` are floats (``0`` and ``0.0`` are one
key), ``max_tokens``, ``top_k`` and ``seed`` integers; a value that cannot be normalized (a float
or boolean seed, a bare string as ``stop``) is a :class:`TypeError` naming the parameter.
The inner backend receives the normalized requests (a numpy seed reaches it as an ``int``).

Nothing wrong is served. Every row holds a SHA-256 checksum of its key and value; a
row whose checksum does not match (a flipped byte on disk) is a miss with a warning: it
is regenerated and replaced, or, offline, a :class:`CacheMissError` that says the row
was corrupt. Rows written before checksums existed (files of an older version, whose
tables are migrated on first writable use) cannot be verified and are treated the same
way. So is a row whose checksum holds but whose values no backend returns (a text that is
not a string, a token count that is not an integer >= 0, a finish reason other than
``"stop"`` and ``"length"``, log-probabilities that are not numbers <= 0 or ``null``, or
not one per candidate): the warning or error names its key. A backend that returns more or
fewer results than requests, or such a value, is a :class:`~agents.base.BackendError`,
and that chunk is not stored.

Nothing foreign is served unless trusted. A checksum proves a row intact, not who wrote
it: keys and checksums are hashes of public data, so anyone who can write the file can
plant a row that passes them. So every row this install writes also carries an
HMAC-SHA256 of its table, key, model id, origin and values under a key of this install:
32 random bytes made at first use (``secrets``), in a file only its user can read (mode
0600) at ``$DELIBERATION_ENV_CACHE_KEY`` if that variable is set, else
``$XDG_CONFIG_HOME/deliberation-env/cache.key`` (default ``~/.config/...``); a key file
that others can read is a :class:`CacheKeyError` saying ``chmod 600``. A row without a
valid MAC is *foreign* (written on another machine, by a version before 0.2, or planted)
and is served only when the user trusts it: ``deliberate cache merge --trust OUT FILE``
(:func:`agents.cache_merge.merge_caches` with ``trust=True``) re-signs the rows of a
trusted file with this install's key and marks each with the file it came from (its
``origin``, under the MAC too), or ``CachedBackend(..., trust_foreign=True)`` serves the
foreign rows of its own file. An untrusted foreign row is a miss, with a warning: the
backend generates the request again and a signed row replaces it (offline, a
:class:`CacheMissError` that says how to trust it). Every report counts the rows of
trusted foreign files: :attr:`CachedBackend.trusted_foreign` (hits) and
``foreign_ignored``, ``deliberate cache stats`` (``trusted_foreign`` by file,
``foreign``) and ``deliberate cache merge`` (``trusted``, ``foreign``). Caches written
before this version hold no MAC: their rows are foreign; to keep them, merge them once
into a new file, ``deliberate cache merge --trust NEW OLD`` (then use NEW, or move it over
OLD). Ray nodes each sign with their own key: merge their files with ``--trust``, or give
every node one key file through ``DELIBERATION_ENV_CACHE_KEY``.

No row is larger than a result of its request can be: a completion holds at most
:data:`CHARS_PER_TOKEN` characters per token of its ``max_tokens`` plus
:data:`ROW_SLACK_CHARS`, a log-probability row 32 characters per candidate plus 64, and no
row more than :data:`MAX_ROW_CHARS` (1 MiB). A backend result over its bound is a
:class:`~agents.base.BackendError` naming the key, and nothing of its call is stored; a
stored row over it is never loaded (SQLite measures it) nor served: a miss with a warning
naming its key, or offline a :class:`CacheMissError`.

The database is in WAL mode (readers never block the writer) with a busy timeout, so
several processes (parallel runs, a learner and an evaluator) can share one file.
``offline=True`` opens the file read-only, serves only what is cached and raises
:class:`CacheMissError` for the rest: an exact offline replay, also from read-only
media (a read-only mount, or a file or directory without write permission; a file whose
write-ahead log cannot be read there is read without it, with a warning). An existing file
that cannot be written, or that is marked read-only (no write permission bit on it or its
directory, ``chmod a-w``: respected even by root), is opened read-only by an online cache
too: it replays what it holds, and a request it does not hold is a
:class:`CacheReadOnlyError` before anything is generated. A file that cannot be used (not a database, damaged, locked for too long, not
there and not creatable) is a :class:`CacheFileError` naming the file and what to do; a
full disk only warns: the results just generated are returned, uncached.

The file is ``$DELIBERATION_ENV_CACHE`` if that variable is set when this module is
imported, else ``~/.cache/deliberation_env/responses.sqlite``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
import numbers
import operator
import os
import secrets
import sqlite3
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from agents import progress
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

KEY_ENV = "DELIBERATION_ENV_CACHE_KEY"
"""The variable naming this install's signing key file (tests and CI point it elsewhere)."""
KEY_BYTES = 32
"""Random bytes of a signing key (HMAC-SHA256)."""
MAX_ROW_CHARS = 1 << 20
"""The most characters any row's text (or log-probabilities) may hold: 1 MiB."""
CHARS_PER_TOKEN = 64
"""The most characters a completion may hold per token of its ``max_tokens`` (a token is a
few characters of text; the longest in common vocabularies a few dozen)."""
ROW_SLACK_CHARS = 4096
"""Characters a completion may hold beyond :data:`CHARS_PER_TOKEN` per token."""

_TABLES = {
    "generations": "key TEXT PRIMARY KEY, model_id TEXT NOT NULL, text TEXT NOT NULL, "
    "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
    "finish_reason TEXT NOT NULL, created REAL NOT NULL, checksum TEXT, mac TEXT, origin TEXT",
    "logprobs": "key TEXT PRIMARY KEY, model_id TEXT NOT NULL, logprobs TEXT NOT NULL, "
    "prompt_tokens INTEGER NOT NULL, created REAL NOT NULL, checksum TEXT, mac TEXT, origin TEXT",
}
_ADDED_COLUMNS = ("checksum", "mac", "origin")  # added to the tables of older versions, NULL in their rows
_SCHEMA_VERSION = 2  # PRAGMA user_version; 0: no checksums, 1: no MACs
_VALUES = {  # the columns a result is built from, in order; the checksum covers them
    "generations": ("text", "prompt_tokens", "completion_tokens", "finish_reason"),
    "logprobs": ("logprobs", "prompt_tokens"),
}
PROGRESS_LABELS = {"generations": "generate", "logprobs": "score"}
"""The progress bar's label of a call, by the table it is served from (:mod:`agents.progress`)."""
FINISH_REASONS = ("stop", "length")
"""The finish reasons a generation may have (:class:`agents.base.Generation`)."""

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


class CacheReadOnlyError(CacheMissError, CacheFileError):
    """The cache file cannot be written (read-only media or permissions), so what it does
    not hold cannot be generated and stored."""


class CacheKeyError(CacheFileError):
    """This install's signing key cannot be made or read, or others can read it; the
    message names the file and what to do."""


# ------------------------------------------------------------------ the signing key
def key_path() -> Path:
    """The file of this install's signing key: ``$DELIBERATION_ENV_CACHE_KEY``, else
    ``$XDG_CONFIG_HOME/deliberation-env/cache.key`` (``~/.config`` without the variable)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV]).absolute()
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config).absolute() / "deliberation-env" / "cache.key"


def signing_key() -> bytes:
    """This install's signing key, made at first use (:func:`key_path`, mode 0600).

    Raises:
        CacheKeyError: The key cannot be made or read, or others can read it.
    """
    return _key_at(key_path())


@functools.cache
def _key_at(path: Path) -> bytes:
    """The key in ``path``, made first if there is none (read once per process)."""
    try:
        if not path.exists():
            _make_key(path)
        return _read_key(path)
    except OSError as error:
        raise CacheKeyError(
            f"the response cache's signing key {path} cannot be made or read ({error}): make its folder "
            f"writable, or set {KEY_ENV} to a file this user can write"
        ) from error


def _make_key(path: Path) -> None:
    """Write a new random key to ``path``, readable by its user alone; when processes make
    it at once, the first one linked in place is the key of all."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(KEY_BYTES))
            file.flush()
            os.fsync(file.fileno())
        with suppress(FileExistsError):  # another process linked its key first
            os.link(temporary, path)
    finally:
        os.unlink(temporary)


def _read_key(path: Path) -> bytes:
    """The key in ``path``, which must be readable by its user alone and hold >= 32 bytes."""
    with path.open("rb") as file:
        mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
        if mode & 0o077:
            raise CacheKeyError(
                f"the response cache's signing key {path} can be read or written by others (mode {mode:o}): "
                f"anyone who reads it can forge cached rows; make it private with `chmod 600 {path}`"
            )
        key = file.read(4096)
    if len(key) < KEY_BYTES:
        raise CacheKeyError(
            f"the response cache's signing key {path} holds {len(key)} bytes, fewer than {KEY_BYTES}: "
            f"delete it (a new one is made; rows signed with it are then foreign) or point {KEY_ENV} elsewhere"
        )
    return key


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
    """Open with ``mode=ro``; where SQLite cannot create the WAL index next to the file
    (a read-only mount: SQLITE_CANTOPEN; a directory without write permission:
    SQLITE_READONLY), open it as ``immutable`` (nobody can be writing to it). An immutable
    file is read without its write-ahead log: a warning says so when there is one."""
    if not path.is_file():
        raise FileNotFoundError(path)
    uri = path.resolve().as_uri()
    try:
        return _checked(sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S))
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
            raise
    log = Path(f"{path}-wal")
    if log.is_file() and log.stat().st_size:
        warnings.warn(
            f"response cache {path} is read from read-only media without its write-ahead log "
            f"{log.name}: rows committed to the log alone are missing; to read them, open the file "
            "once where it can be written (that folds the log into it)",
            RuntimeWarning,
            stacklevel=5,
        )
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
    if path.is_dir():
        return CacheFileError(f"{where} is a folder: name the cache's file (a SQLite file, e.g. {path / 'cache.sqlite'})")
    if isinstance(error, FileNotFoundError):
        return CacheFileError(
            f"{where} does not exist: check the path (a run that plays with the cache, not offline, fills it)"
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
        return CacheReadOnlyError(
            f"{where} cannot be written ({error}): make the file and its directory writable, "
            "pass another path, or replay it read-only with offline=True"
        )
    return CacheFileError(f"{where}: {type(error).__name__}: {error}")


def _create_or_migrate(db: sqlite3.Connection) -> None:
    """Create the tables, or add the checksum, MAC and origin columns to the tables of an
    older version (their rows keep NULLs: without a checksum they cannot be verified,
    without a MAC they are foreign, so neither is served untrusted).

    It always writes the schema version, so a file that cannot be written fails here,
    before anything is generated, not when the first results are stored.
    """
    db.execute("BEGIN IMMEDIATE")
    for table, columns in _TABLES.items():
        db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        for column in sorted(set(_ADDED_COLUMNS) - _column_names(db, table)):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
    db.execute("COMMIT")


def _column_names(db: sqlite3.Connection, table: str) -> set[str]:
    """The columns of ``table``; empty if there is no such table."""
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


# ----------------------------------------------------------------- the keys
def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _generation_key(model_id: str, request: GenerationRequest) -> str:
    """The key of a request :func:`_normalized` already."""
    return _key(
        "generate",
        model_id,
        request.messages,
        request.max_tokens,
        request.temperature,
        request.top_p,
        request.seed,
        request.stop,
        # only when set, so that the keys of requests without a top-k are those of earlier versions
        *([["top_k", request.top_k]] if request.top_k else []),
    )


def _logprob_key(model_id: str, request: LogprobRequest) -> str:
    """The key of a request :func:`_normalized` already."""
    return _key("logprobs", model_id, request.messages, request.candidates)


def _normalized(request: Request) -> Request:
    """``request`` with plain Python values: what is keyed, and what the inner backend gets.

    Raises:
        TypeError: A parameter cannot be normalized; the message names it.
    """
    if isinstance(request, LogprobRequest):
        return LogprobRequest(_messages(request.messages), _strings("candidates", request.candidates))
    return GenerationRequest(
        _messages(request.messages),
        max_tokens=_integer("max_tokens", request.max_tokens),
        temperature=_real("temperature", request.temperature),
        top_p=_real("top_p", request.top_p),
        seed=_integer("seed", request.seed),
        stop=_strings("stop", request.stop),
        top_k=_integer("top_k", request.top_k),
    )


def _real(name: str, value: object) -> float:
    """``value`` as a Python float (any int, float or numpy number; not a boolean)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")


def _integer(name: str, value: object) -> int:
    """``value`` as a Python int (any int or numpy integer; not a float or a boolean)."""
    if not isinstance(value, bool):
        with suppress(TypeError):
            return operator.index(value)
    raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")


def _strings(name: str, values: object) -> tuple[str, ...]:
    """``values`` as a tuple of Python strings (a bare string is refused, not split)."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {values!r}")
    if not all(isinstance(value, str) for value in values):
        raise TypeError(f"{name} must hold only strings, got {values!r}")
    return tuple(str(value) for value in values)


def _messages(messages: Sequence[Message]) -> tuple[dict[str, str], ...]:
    """``messages`` as plain dicts of strings."""
    for message in messages:
        if not isinstance(message, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in message.items()
        ):
            raise TypeError(f"messages must be dicts of strings, got {message!r:.200}")
    return tuple({str(k): str(v) for k, v in message.items()} for message in messages)


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


def mac(secret: bytes, table: str, key: str, model_id: str, origin: str | None, values: Sequence[object]) -> str:
    """The HMAC-SHA256 under ``secret`` of a row: its table, key, model id, origin (None:
    written here; else the trusted file it came from) and values (:data:`_VALUES`)."""
    message = json.dumps([table, key, model_id, origin, *values]).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def signed(
    secret: bytes, table: str, key: str, model_id: str, origin: object, values: Sequence[object], tag: object
) -> bool:
    """Whether ``tag`` is the row's MAC under ``secret``: this install wrote the row, or
    re-signed it from a file the user trusted."""
    if not isinstance(tag, str) or not (origin is None or isinstance(origin, str)):
        return False
    try:
        return hmac.compare_digest(mac(secret, table, key, model_id, origin, values), tag)
    except TypeError:  # a damaged type cannot be serialized, so it was not signed
        return False


def row_limit(table: str, request: Request | None) -> int:
    """The most characters the text (or log-probabilities) of a row of ``request`` may hold:
    :data:`CHARS_PER_TOKEN` per token of its budget plus :data:`ROW_SLACK_CHARS`, 32 per
    candidate plus 64; never over :data:`MAX_ROW_CHARS` (also the bound without a request)."""
    if request is None:
        return MAX_ROW_CHARS
    if table == "generations":
        bound = CHARS_PER_TOKEN * request.max_tokens + ROW_SLACK_CHARS
    else:
        bound = 32 * len(request.candidates) + 64
    return min(bound, MAX_ROW_CHARS)


def row_select(table: str, columns: set[str]) -> str:
    """A ``SELECT`` of ``table``'s rows as ``key, size, *values, checksum, mac, origin,
    model_id, created``: ``size`` is the first value's (the text's or the
    log-probabilities') length in bytes, and the value is loaded only when it could hold
    at most :data:`MAX_ROW_CHARS` characters (else NULL; :func:`row_size` gives its
    characters); columns the file lacks (an older version's) are NULL. Append a ``WHERE``.
    (SQLite's ``length`` of a text stops at its first NUL: a NUL first let a row of any
    size past the bounds.)"""
    first, *rest = _VALUES[table]
    added = [column if column in columns else "NULL" for column in _ADDED_COLUMNS]
    size = f"length(CAST({first} AS BLOB))"
    loaded = f"CASE WHEN {size} <= {4 * MAX_ROW_CHARS} THEN {first} END"  # UTF-8: at most 4 bytes a character
    return f"SELECT key, {size}, {', '.join([loaded, *rest, *added])}, model_id, created FROM {table}"


def row_size(size: int | None, value: object) -> int:
    """The characters of a row's first value: counted where :func:`row_select` loaded it,
    else its ``size`` in bytes (over ``4 * MAX_ROW_CHARS``, so over any limit either way)."""
    return len(value) if isinstance(value, str) else size or 0


def _to_values(result: Generation | LogprobResult) -> tuple:
    if isinstance(result, Generation):
        return (result.text, result.prompt_tokens, result.completion_tokens, result.finish_reason)
    return (json.dumps(result.logprobs), result.prompt_tokens)


def _from_values(table: str, values: Sequence[object]) -> Generation | LogprobResult:
    """The result of a row whose values passed :func:`row_problem`."""
    if table == "generations":
        return Generation(*values)
    return LogprobResult(tuple(json.loads(values[0])), values[1])


def row_problem(table: str, values: Sequence[object], request: Request | None = None) -> str | None:
    """What is wrong with a row's values (those of :data:`_VALUES`), or None if nothing is.

    A row holds what a backend returns (:class:`~agents.base.Generation`,
    :class:`~agents.base.LogprobResult`): a text, token counts that are integers >= 0, a
    finish reason of :data:`FINISH_REASONS`, log-probabilities that are floats <= 0 (not
    NaN) or null in a JSON list, and, given the ``request``, one of them per candidate.
    """
    if table == "generations":
        text, prompt_tokens, completion_tokens, finish_reason = values
        if not isinstance(text, str):
            return f"text is a {type(text).__name__}, not a string"
        if not isinstance(finish_reason, str) or finish_reason not in FINISH_REASONS:
            return f"finish_reason is {finish_reason!r}, not one of {FINISH_REASONS}"
        return _count_problem("prompt_tokens", prompt_tokens) or _count_problem(
            "completion_tokens", completion_tokens
        )
    logprobs, prompt_tokens = values
    scores = _json_list(logprobs)
    if scores is None or not all(_is_logprob(score) for score in scores):
        return f"logprobs is {logprobs!r:.100}, not a JSON list of floats <= 0 and nulls"
    if request is not None and len(scores) != len(request.candidates):
        return f"logprobs holds {len(scores)} scores for {len(request.candidates)} candidates"
    return _count_problem("prompt_tokens", prompt_tokens)


def _count_problem(name: str, value: object) -> str | None:
    if type(value) is int and value >= 0:
        return None
    return f"{name} is {value!r}, not an integer >= 0"


def _json_list(text: object) -> list | None:
    """The list that ``text`` holds in JSON, else None."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _is_logprob(score: object) -> bool:
    return score is None or (type(score) is float and not math.isnan(score) and score <= 0.0)


def _result_problem(table: str, result: object, request: Request) -> str | None:
    """What is wrong with a result a backend returned, as it would be stored, or None."""
    kind = Generation if table == "generations" else LogprobResult
    if not isinstance(result, kind):
        return f"a {type(result).__name__}, not a {kind.__name__}"
    try:
        values = _to_values(result)
    except (TypeError, ValueError) as error:  # log-probs that JSON cannot hold
        return f"logprobs {result.logprobs!r:.100} cannot be stored: {error}"
    return row_problem(table, values, request) or _size_problem(table, len(values[0]), request)


def _size_problem(table: str, size: int, request: Request | None) -> str | None:
    """What is wrong with a row whose first value holds ``size`` characters, or None."""
    limit = row_limit(table, request)
    if size <= limit:
        return None
    if request is None or limit == MAX_ROW_CHARS:
        bound = f"{MAX_ROW_CHARS:,}, the most any row may hold"
    elif table == "generations":
        bound = f"{limit:,} for max_tokens={request.max_tokens}"
    else:
        bound = f"{limit:,} for {len(request.candidates)} candidates"
    return f"{size:,} characters, over the limit of {bound}"


@dataclass
class _Lookup:
    """What a lookup found: servable results by key (those of trusted foreign rows also in
    ``trusted_foreign``), and the keys it could not serve."""

    found: dict[str, Generation | LogprobResult] = field(default_factory=dict)
    trusted_foreign: set[str] = field(default_factory=set)
    oversized: dict[str, str] = field(default_factory=dict)  # key: its size against its limit
    corrupt: set[str] = field(default_factory=set)
    unverified: set[str] = field(default_factory=set)
    invalid: dict[str, str] = field(default_factory=dict)  # key: what is wrong with its values
    foreign: set[str] = field(default_factory=set)

    def unservable(self) -> int:
        """How many rows were found but cannot be served."""
        return sum(map(len, (self.oversized, self.corrupt, self.unverified, self.invalid, self.foreign)))


def _lookup(
    db: sqlite3.Connection, table: str, requests: dict[str, Request], secret: bytes, trust_foreign: bool
) -> _Lookup:
    """The rows of ``requests`` (by key) in ``table`` that are within their size, intact,
    valid and signed with ``secret`` (or, with ``trust_foreign``, foreign); the others apart."""
    lookup = _Lookup()
    columns = _column_names(db, table)
    if not columns:  # an empty file, opened read-only
        return lookup
    unique = list(requests)
    for start in range(0, len(unique), _SQL_VARIABLES):
        batch = unique[start : start + _SQL_VARIABLES]
        select = f"{row_select(table, columns)} WHERE key IN ({','.join('?' * len(batch))})"
        for key, size, *values, stored, tag, origin, model_id, _ in db.execute(select, batch):
            request = requests[key]
            if problem := _size_problem(table, row_size(size, values[0]), request):
                lookup.oversized[key] = problem
            elif stored is None:
                lookup.unverified.add(key)
            elif not _intact(key, values, stored):
                lookup.corrupt.add(key)
            elif problem := row_problem(table, values, request):
                lookup.invalid[key] = problem
            elif (mine := signed(secret, table, key, model_id, origin, values, tag)) or trust_foreign:
                lookup.found[key] = _from_values(table, values)
                if origin is not None or not mine:
                    lookup.trusted_foreign.add(key)
            else:
                lookup.foreign.add(key)
    return lookup


def _fingerprintless_rows(db: sqlite3.Connection, model_id: str) -> dict[str, int]:
    """Rows by model id that an older version may have written for the model ``model_id``
    names: under an id without a fingerprint (no ``@``) that begins its name (the part before
    the ``@``; older transformers ids lacked the dtype). None if ``model_id`` has no ``@``."""
    if "@" not in model_id:
        return {}
    name = model_id.rsplit("@", 1)[0]
    counts: dict[str, int] = {}
    for table in _TABLES:
        if _column_names(db, table):
            select = (
                f"SELECT model_id, COUNT(*) FROM {table} "
                "WHERE instr(model_id, '@') = 0 AND instr(?, model_id) = 1 GROUP BY model_id"
            )
            for old_id, count in db.execute(select, (name,)):
                counts[old_id] = counts.get(old_id, 0) + count
    return counts


# ----------------------------------------------------------------- the backend
class CachedBackend:
    """A backend that serves repeated requests from a SQLite file.

    Args:
        backend: The backend that generates cache misses.
        path: The SQLite file (created if missing, unless ``offline``). An existing file
            that cannot be written, or is marked read-only (``chmod a-w`` on it or its
            directory), is opened read-only: it serves what it holds.
        offline: Open the file read-only and serve only cached results; a miss raises
            :class:`CacheMissError`.
        chunk_size: Most misses per inner backend call; each chunk is committed as
            soon as it is generated. None: the backend's ``preferred_chunk`` attribute
            if it has one (a batching backend decodes a whole phase together), else 64 (a
            backend that decodes one request at a time then commits every 64).
        trust_foreign: Also serve the file's foreign rows (no valid MAC of this install's
            key: written on another machine or by an older version), as from a file the
            user trusts; they are counted in ``trusted_foreign``. Only for a file you trust:
            anyone who could write it decides what these requests return.

    Raises:
        CacheFileError: The file cannot be used (the message says why and what to do).
        CacheKeyError: This install's signing key cannot be made or read.

    Attributes:
        writable: Whether misses are generated and stored: False offline and for a
            file opened read-only.
        hits: Requests served from the cache since construction.
        trusted_foreign: Of the hits, those served from rows of trusted foreign files
            (merged with ``--trust``, or foreign rows served under ``trust_foreign``).
        foreign_ignored: Foreign rows found and not served (generated again) since
            construction.
        misses: Requests sent to the inner backend since construction.
    """

    def __init__(
        self,
        backend: Backend,
        path: str | os.PathLike[str] = DEFAULT_CACHE_PATH,
        *,
        offline: bool = False,
        chunk_size: int | None = None,
        trust_foreign: bool = False,
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
        self.trust_foreign = trust_foreign
        self.hits = self.trusted_foreign = self.foreign_ignored = self.misses = 0
        self._secret = signing_key()
        # Fail now, not in the middle of a run: open (and create or migrate) the file.
        self.writable = not offline and _open_writable(self.path)
        if not self.writable:
            with _open(self.path, read_only=True):
                pass

    # ---------------------------------------------------------------- the protocol
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Cached generations; misses generated by the inner backend and stored.

        Raises:
            TypeError: A request parameter cannot be normalized into a key.
            CacheMissError: A request is not cached and the cache is offline or read-only.
        """
        plain = [_normalized(request) for request in requests]
        keys = [_generation_key(self.model_id, request) for request in plain]
        return self._serve("generations", keys, plain, self.backend.generate)

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Cached log-probabilities; misses scored by the inner backend and stored.

        Raises:
            TypeError: A request parameter cannot be normalized into a key.
            CacheMissError: A request is not cached and the cache is offline or read-only.
        """
        plain = [_normalized(request) for request in requests]
        keys = [_logprob_key(self.model_id, request) for request in plain]
        return self._serve("logprobs", keys, plain, self.backend.next_token_logprobs)

    # --------------------------------------------------------------------- lookup
    def _serve(
        self,
        table: str,
        keys: list[str],
        requests: Sequence[Request],
        produce: Callable[[list[Request]], list[Result]],
    ) -> list[Result]:
        by_key = dict(zip(keys, requests, strict=True))
        with _open(self.path, read_only=not self.writable) as db:
            lookup = _lookup(db, table, by_key, self._secret, self.trust_foreign)
        found = lookup.found
        missing = {key: request for key, request in by_key.items() if key not in found}
        self.hits += sum(key in found for key in keys)
        self.trusted_foreign += sum(key in lookup.trusted_foreign for key in keys)
        self.foreign_ignored += len(lookup.foreign)
        self._warn_unservable(lookup)
        if missing and not self.writable:
            raise self._unservable(lookup, missing, len(keys))
        pending = list(missing.items())
        with progress.call(len(by_key), PROGRESS_LABELS[table]) as advance:
            advance(len(by_key) - len(pending), 0)  # the hits
            for start in range(0, len(pending), self.chunk_size):
                chunk = pending[start : start + self.chunk_size]
                results = produce([request for _, request in chunk])  # advances the bar as it decodes
                self.misses += len(chunk)
                self._check(table, chunk, results)
                found.update(zip((key for key, _ in chunk), self._store(table, chunk, results), strict=True))
        return [found[key] for key in keys]

    def _check(self, table: str, chunk: list[tuple[str, Request]], results: list[Result]) -> None:
        """Raise a :class:`BackendError` unless ``results`` holds one valid result per request."""
        where = f"backend {self.model_id} ({self.backend!r})"
        if len(results) != len(chunk):
            raise BackendError(
                f"{where} returned {len(results)} results for {len(chunk)} requests; "
                "none of them was cached"
            )
        for (key, request), result in zip(chunk, results, strict=True):
            if problem := _result_problem(table, result, request):
                raise BackendError(
                    f"{where} returned an invalid result for key {key}, {_describe(request)}: {problem}; "
                    f"none of the {len(chunk)} results of its call was cached"
                )

    def _store(self, table: str, chunk: list[tuple[str, Request]], results: list[Result]) -> list[Result]:
        """Write one chunk in one transaction and return what to serve for it: a servable row
        that another process stored for a key meanwhile is kept and served (the first row of
        a key is the one every run replays: a text may depend on the batch it was decoded
        in, and replacing it would change what an earlier run was rewarded on), and the
        results just made elsewhere. On a full disk, warn and keep going."""
        now = time.time()
        kept: dict[str, Result] = {}
        columns = ("key", *_VALUES[table], "checksum", "mac", "model_id", "created")
        insert = (
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})"
        )
        try:
            with _open(self.path, read_only=False) as db:
                db.execute("BEGIN IMMEDIATE")
                kept = _lookup(db, table, dict(chunk), self._secret, self.trust_foreign).found
                rows = []
                for (key, _), result in zip(chunk, results, strict=True):
                    if key not in kept:  # absent, or a row that cannot be served: replaced
                        values = _to_values(result)
                        tag = mac(self._secret, table, key, self.model_id, None, values)
                        rows.append((key, *values, _checksum(key, values), tag, self.model_id, now))
                db.executemany(insert, rows)
                db.execute("COMMIT")
        except CacheFullError as error:
            kept = {}
            warnings.warn(
                f"{error}. {len(chunk)} results of {self.model_id} just generated are "
                "returned but not cached",
                RuntimeWarning,
                stacklevel=4,
            )
        return [kept.get(key, result) for (key, _), result in zip(chunk, results, strict=True)]

    def _warn_unservable(self, lookup: _Lookup) -> None:
        """One warning per kind of row that was found but cannot be served."""
        then = "" if not self.writable else " but regenerated and replaced"
        if lookup.corrupt:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.corrupt)} rows of {self.model_id} "
                f"failed their checksum (the file is damaged); they are not served{then}",
                RuntimeWarning,
                stacklevel=4,
            )
        if lookup.unverified:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.unverified)} rows of {self.model_id} "
                "were written by an older version without a checksum and cannot be verified; "
                f"they are not served{then}",
                RuntimeWarning,
                stacklevel=4,
            )
        if lookup.invalid:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.invalid)} rows of {self.model_id} hold "
                f"values no backend returns ({_first(lookup.invalid)}); they are not served{then}",
                RuntimeWarning,
                stacklevel=4,
            )
        if lookup.oversized:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.oversized)} rows of {self.model_id} are larger "
                f"than a result of their request can be ({_first(lookup.oversized)}); they are not served{then}",
                RuntimeWarning,
                stacklevel=4,
            )
        if lookup.foreign:
            warnings.warn(
                f"response cache {self.path}: {len(lookup.foreign)} rows of {self.model_id} are foreign: "
                f"{FOREIGN}; they are not served{then} ({TRUST_HINT})",
                RuntimeWarning,
                stacklevel=4,
            )

    def _unservable(
        self, lookup: _Lookup, missing: dict[str, Request], total: int
    ) -> CacheMissError:
        """The error for requests that cannot be served by a cache that cannot store them."""
        reasons = [
            f"{count} {why}"
            for count, why in (
                (len(missing) - lookup.unservable(), "not cached"),
                (len(lookup.corrupt), "cached in a corrupt row (checksum mismatch)"),
                (len(lookup.unverified), "cached without a checksum by an older version"),
                (len(lookup.invalid), f"cached with invalid values ({_first(lookup.invalid)})"),
                (len(lookup.oversized), f"cached in an oversized row ({_first(lookup.oversized)})"),
                (len(lookup.foreign), f"cached in a foreign row ({FOREIGN}: {TRUST_HINT})"),
            )
            if count
        ]
        first = next(iter(missing.values()))
        problem = (
            f"{len(missing)} of {total} requests of {self.model_id} cannot be served: "
            f"{', '.join(reasons)} (first: {_describe(first)})"
        )
        if self.offline:
            return CacheMissError(
                f"offline cache {self.path}: {problem}{self._older_rows_note()}; run once "
                "with offline=False to generate them"
            )
        return CacheReadOnlyError(
            f"response cache {self.path} cannot be written (it was opened read-only): {problem}"
            f"{self._older_rows_note()}; to generate them, make the file and its directory "
            "writable or copy it to a writable path (offline=True replays only what it holds)"
        )

    def _older_rows_note(self) -> str:
        """A note on rows an older version wrote for this kind of model, if the file has any."""
        with _open(self.path, read_only=True) as db:
            older = _fingerprintless_rows(db, self.model_id)
        if not older:
            return ""
        names = ", ".join(f"{model_id} ({count})" for model_id, count in list(older.items())[:3])
        return (
            f". The file holds rows of {names}, written by an older version whose model ids "
            "named a model by its file or server name alone: they are never served, since "
            "nothing ties them to this model's bytes"
        )

    def __repr__(self) -> str:
        trusting = ", trust_foreign=True" if self.trust_foreign else ""
        return f"CachedBackend({self.backend!r}, path={str(self.path)!r}, offline={self.offline}{trusting})"


FOREIGN = "no valid MAC of this install's key, so written on another machine, by a version before 0.2, or planted"
"""Why a foreign row is not served (warnings and errors)."""
TRUST_HINT = (
    "if you trust the file, merge it into a new cache with `deliberate cache merge --trust NEW FILE` "
    "(or pass trust_foreign=True to CachedBackend)"
)
"""How to serve the rows of a foreign file the user trusts."""


def _open_writable(path: Path) -> bool:
    """Create or migrate the cache at ``path``; False if it exists but cannot be written, or
    is marked read-only: it or its directory has no write permission bit (``chmod a-w``,
    which root's writes would otherwise go through).

    Raises:
        CacheFileError: The file cannot be used, or cannot be created.
    """
    if path.is_file() and any(not place.stat().st_mode & 0o222 for place in (path, path.parent)):
        return False
    try:
        with _open(path, read_only=False) as db:
            _create_or_migrate(db)
    except CacheReadOnlyError:
        if not path.is_file():
            raise
        return False
    return True


def _first(problems: dict[str, str]) -> str:
    """The first of ``problems`` (what is wrong, by key), for a message: ``key K: problem``
    (empty when there is none)."""
    return next((f"key {key}: {problem}" for key, problem in problems.items()), "")


def _describe(request: GenerationRequest | LogprobRequest) -> str:
    fields = asdict(request)
    last = fields.pop("messages")[-1]["content"]
    return f"{fields}, last message {last[:80]!r}"


# ------------------------------------------------------------ CLI helpers
def cache_stats(path: str | os.PathLike[str] = DEFAULT_CACHE_PATH) -> dict:
    """What the cache at ``path`` holds (``deliberate cache stats``); reads only.

    Returns:
        ``{"path", "exists", "size_bytes", "generations", "logprobs", "prompt_tokens",
        "completion_tokens", "models": {model_id: rows}, "trusted_foreign": {file: rows},
        "foreign"}``: ``trusted_foreign`` counts the rows re-signed from each trusted file
        (``deliberate cache merge --trust``), ``foreign`` those without a valid MAC of this
        install's key, never served untrusted; counts are 0 for a missing file.

    Raises:
        CacheFileError: The file cannot be read (the message says why and what to do).
        CacheKeyError: This install's signing key cannot be made or read.
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
        "trusted_foreign": {},
        "foreign": 0,
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
            stats["trusted_foreign"], stats["foreign"] = _origins(db, signing_key())
    stats["size_bytes"] = sum(
        p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
    )
    return stats


def _origins(db: sqlite3.Connection, secret: bytes) -> tuple[dict[str, int], int]:
    """The rows signed with ``secret`` that came from trusted files, by file, and the
    foreign rows (no valid MAC)."""
    trusted: dict[str, int] = {}
    foreign = 0
    for table in _TABLES:
        for key, _, *values, _, tag, origin, model_id, _ in db.execute(row_select(table, _column_names(db, table))):
            if not signed(secret, table, key, model_id, origin, values, tag):  # an oversized text is None
                foreign += 1
            elif origin is not None:
                trusted[origin] = trusted.get(origin, 0) + 1
    return trusted, foreign


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
