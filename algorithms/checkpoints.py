"""Checkpoint files of the learners: written atomically, read back whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def save_checkpoint(state: dict[str, Any], path: str | Path) -> None:
    """Write ``state`` to ``path`` atomically: a run killed meanwhile keeps the previous file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".tmp")
    torch.save(state, partial)
    partial.replace(path)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state written by :func:`save_checkpoint` (it holds NumPy RNG states: a full unpickle,
    so load only checkpoints you wrote)."""
    return torch.load(path, weights_only=False)
