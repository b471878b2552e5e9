"""Model ids that name a model by what it is: a readable name and a hash of its files.

A backend's ``model_id`` keys the response cache (:class:`agents.CachedBackend`), so two
different models must never share one: a name alone (a file's or a directory's, such as
the ``<run>/agent_0`` that every training run writes) would serve one model the texts of
another. The ids of local models end in ``@sha256:`` and the first
:data:`DIGEST_CHARS` hex digits of a SHA-256 over the model's bytes:

- a file (a GGUF): its bytes;
- a model directory (transformers, CTranslate2): each file at its top level (weights,
  config, tokenizer, chat template; what ``from_pretrained`` reads), by name and content,
  except ``.gguf`` files other than the one loaded; a peft adapter directory also takes in
  the directory of its base model.

Hashing runs at about 1 GB/s. A file of :data:`MEMO_MIN_BYTES` or more is hashed once: its
digest is kept, in this process and in a small file under
``$XDG_CACHE_HOME/deliberation_env/digests`` (default ``~/.cache``), under the file's
identity (its path, device, inode, size and modification and change times; writing to the
file changes its change time, which no program can set back), and served only from a file
and folder that this user alone can write. Smaller files are hashed on
every use, which takes less than a clock tick of the file system's timestamps could hide.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from agents.cache_dirs import cache_dir

DIGEST_CHARS = 32
"""Hex digits of the SHA-256 in a model id (128 bits: no two models collide by chance or design)."""

MEMO_MIN_BYTES = 64 * 2**20
"""Files at least this large have their digest remembered (smaller ones hash in milliseconds)."""


def fingerprinted(name: str, digest: str) -> str:
    """A model id: ``name``, then ``@sha256:`` and the head of ``digest``.

    >>> fingerprinted("llamacpp:tiny", "0123456789abcdef" * 4)
    'llamacpp:tiny@sha256:0123456789abcdef0123456789abcdef'
    """
    return f"{name}@sha256:{digest[:DIGEST_CHARS]}"


def digests_dir() -> Path:
    """Where remembered digests live: ``$XDG_CACHE_HOME/deliberation_env/digests``."""
    return cache_dir("digests")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, in hex; remembered for large files (see the module).

    Raises:
        OSError: The file cannot be read.
    """
    path = Path(path).resolve()
    stat = path.stat()
    if stat.st_size < MEMO_MIN_BYTES:
        return _hash_file(path)
    identity = (str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    return _remembered_sha256(identity)


@functools.lru_cache(maxsize=256)
def _remembered_sha256(identity: tuple[str, int, int, int, int, int]) -> str:
    """The digest of the file ``identity[0]`` as it was when ``identity`` was taken: read
    from the digests directory, else hashed and written there (skipped where it cannot be
    written, e.g. a read-only home)."""
    memo = digests_dir() / hashlib.sha256(json.dumps(identity).encode()).hexdigest()
    try:
        remembered = memo.read_text().strip() if _own(memo) else ""
    except OSError:
        remembered = ""
    if len(remembered) == 64 and all(c in "0123456789abcdef" for c in remembered):
        return remembered
    digest = _hash_file(Path(identity[0]))
    try:
        memo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if memo.parent.stat().st_uid == os.getuid():
            os.chmod(memo.parent, 0o700)  # a folder an older version made under the umask
        with tempfile.NamedTemporaryFile("w", dir=memo.parent, delete=False) as staged:
            staged.write(digest)
        os.replace(staged.name, memo)  # whole or not at all, also with several processes
    except OSError:
        pass  # not remembered: hashed again next time
    return digest


def _own(memo: Path) -> bool:
    """Whether ``memo`` is this user's alone to write: a remembered digest names the model
    whose responses the cache serves, and one planted by another user (a digests folder a
    umask of 002 left group-writable) gave one model another's id and rows."""
    try:
        return all(
            (status := os.stat(path)).st_uid == os.getuid() and not status.st_mode & 0o022
            for path in (memo.parent, memo)
        )
    except OSError:
        return False


def _hash_file(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def directory_sha256(directory: str | os.PathLike[str], gguf_file: str | None = None) -> str:
    """The SHA-256 of a model directory: of each top-level file's name and digest, in name
    order, ``.gguf`` files left out but for ``gguf_file`` (a file name in it); a peft adapter's directory
    (``adapter_config.json``) also takes in the digest of its base model's directory, when
    that is a local directory, else its name.

    Raises:
        OSError: A file cannot be read.
    """
    directory = Path(directory)
    files = sorted(path for path in directory.iterdir() if path.is_file() and path.suffix != ".gguf")
    if gguf_file is not None:
        files.append(directory / gguf_file)
    parts = [[str(path.relative_to(directory)), file_sha256(path)] for path in files]
    adapter = directory / "adapter_config.json"
    if adapter.is_file():
        base = str(json.loads(adapter.read_text()).get("base_model_name_or_path") or "")
        base_dir = Path(base)
        is_local = bool(base) and base_dir.is_dir() and base_dir.resolve() != directory.resolve()
        parts.append(["base model", directory_sha256(base_dir) if is_local else base])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()
