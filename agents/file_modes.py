"""The modes a new file or folder gets here, for what is written by a library that sets its own.

safetensors writes its files ``0o600`` and :func:`tempfile.mkdtemp` makes its folders
``0o700``: a run folder or a shared base on a shared file system held files that only their
writer could read, beside readable logs. :func:`with_umask_mode` gives them back the modes
the process's umask gives everything else.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path


def with_umask_mode(*paths: str | Path) -> None:
    """Give each of ``paths`` the mode a new one gets here: ``0o666`` less the umask for a
    file, ``0o777`` less the umask for a folder. A file system without POSIX modes keeps its
    own."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~_umask())


def with_umask_modes_below(folder: str | Path) -> None:
    """:func:`with_umask_mode` for ``folder`` and everything under it (links left alone)."""
    root = Path(folder)
    with_umask_mode(root, *(path for path in root.rglob("*") if not path.is_symlink()))


@functools.cache
def _umask() -> int:
    """The process's umask, read once (reading it sets it for a moment)."""
    umask = os.umask(0o077)
    os.umask(umask)
    return umask
