"""Models named by a Hugging Face id: whether a name is one, whether the hub may be reached,
the local folder of an id, and the error for an id that gave no model."""

from __future__ import annotations

import os
from pathlib import Path

MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja")
"""What a model folder needs of a hub repository (config, weights, tokenizer, chat template):
not its other formats (``.bin``, ``.gguf``, ONNX) beside them."""


def is_path(name: str) -> bool:
    """Whether ``name`` can only be a path, not a Hugging Face id (ids are ``ORG/NAME``).

    >>> is_path("Qwen/Qwen2.5-0.5B-Instruct"), is_path("./model"), is_path("/models/qwen"), is_path("a/b/c")
    (False, True, True, True)
    """
    return Path(name).is_absolute() or name.startswith((".", "~")) or name.endswith(".gguf") or name.count("/") > 1


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` keeps the hub from being reached (read when called)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def no_hub_model(reader: str, name: str, offline: bool, error: Exception) -> FileNotFoundError:
    """The error for a hub id that gave no model: what was tried, and what to try."""
    why = (
        " (HF_HUB_OFFLINE is set: only the local cache is read)"
        if offline
        else " (on a machine that cannot reach the hub, HF_HUB_OFFLINE=1 reads the cache at once, without retries)"
    )
    return FileNotFoundError(f"{reader}: {name!r} is no local model and the Hugging Face hub gave none{why}: {error}")


def hub_folder(reader: str, name: str) -> Path:
    """The local folder of the hub model ``name``: its files downloaded once into the Hugging
    Face cache (:data:`MODEL_FILES`), or read from the cache alone under ``HF_HUB_OFFLINE``.

    Raises:
        FileNotFoundError: When the hub (or the cache) has no such model (:func:`no_hub_model`).
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    offline = hub_offline()
    try:
        return Path(snapshot_download(name, allow_patterns=list(MODEL_FILES), local_files_only=offline))
    except (OSError, ValueError, HfHubHTTPError, LocalEntryNotFoundError) as error:
        raise no_hub_model(reader, name, offline, error) from error
