"""Models named by a Hugging Face id: whether a name is one, whether the hub may be reached,
the local folder of an id, and the error for an id that gave no model."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja")
"""What a model folder needs of a hub repository (config, weights, tokenizer, chat template):
not its other formats (``.bin``, ``.gguf``, ONNX) beside them."""


def is_path(name: str) -> bool:
    """Whether ``name`` can only be a path, not a Hugging Face id (ids are ``ORG/NAME``).

    >>> is_path("Qwen/Qwen2.5-0.5B-Instruct"), is_path("./model"), is_path("/models/qwen"), is_path("a/b/c")
    (False, True, True, True)
    """
    return Path(name).is_absolute() or name.startswith((".", "~")) or name.endswith(".gguf") or name.count("/") > 1


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
"""Variables naming a proxy: behind one, the proxy resolves the hub's host, not this machine."""


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` keeps the hub from being reached (read when called)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_host() -> str:
    """The hub's host name: ``HF_ENDPOINT``'s (a mirror), else ``huggingface.co``.

    >>> hub_host() if "HF_ENDPOINT" not in os.environ else "huggingface.co"
    'huggingface.co'
    """
    return urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"


def hub_unresolvable() -> bool:
    """Whether this machine finds no address for the hub's host (no network, or none to the
    internet), so that asking the hub can only fail. The hub client would retry each file of
    a model for about a minute before reading the cache; a name lookup answers at once.
    Behind a proxy (:data:`PROXY_VARIABLES`) the proxy resolves the host: never unresolvable."""
    if any(os.environ.get(variable) for variable in PROXY_VARIABLES):
        return False
    try:
        socket.getaddrinfo(hub_host(), 443, type=socket.SOCK_STREAM)
    except OSError:
        return True
    return False


def cache_only() -> str | None:
    """Why only the local Hugging Face cache is read, or None where the hub may be asked
    (read when called, so a test or a script may set ``HF_HUB_OFFLINE``)."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    if hub_unresolvable():
        return f"{hub_host()} has no address on this machine"
    return None


def no_hub_model(reader: str, name: str, cache_only_because: str | None, error: Exception) -> FileNotFoundError:
    """The error for a hub id that gave no model: what was tried (``cache_only_because``:
    why only the cache was read, from :func:`cache_only`), and what to try."""
    why = (
        f" ({cache_only_because}: only the local cache was read; download the model where the hub can be "
        "reached, or give a local folder)"
        if cache_only_because
        else " (on a machine that cannot reach the hub, HF_HUB_OFFLINE=1 reads the cache at once, without retries)"
    )
    return FileNotFoundError(f"{reader}: {name!r} is no local model and the Hugging Face hub gave none{why}: {error}")


def hub_folder(reader: str, name: str) -> Path:
    """The local folder of the hub model ``name``: its files downloaded once into the Hugging
    Face cache (:data:`MODEL_FILES`), or read from the cache alone where :func:`cache_only`
    says why (``HF_HUB_OFFLINE``, or a hub this machine cannot resolve).

    Raises:
        FileNotFoundError: When the hub (or the cache) has no such model (:func:`no_hub_model`).
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    because = cache_only()
    try:
        return Path(snapshot_download(name, allow_patterns=list(MODEL_FILES), local_files_only=because is not None))
    except (OSError, ValueError, HfHubHTTPError, LocalEntryNotFoundError) as error:
        raise no_hub_model(reader, name, because, error) from error
