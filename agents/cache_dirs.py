"""Where the package keeps what it computes once per machine: ``$XDG_CACHE_HOME/deliberation_env``
(default ``~/.cache``), one folder per kind (``digests``, ``gguf``, ``ct2``, ``bases``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """The folder of ``kind`` under ``$XDG_CACHE_HOME/deliberation_env`` (read when called,
    so a test or a script may set the variable).

    >>> cache_dir("gguf").parts[-2:]
    ('deliberation_env', 'gguf')
    """
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "deliberation_env" / kind
