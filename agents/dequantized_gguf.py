"""A GGUF model read by transformers once: dequantized into a plain model folder, then reused.

transformers reads a GGUF file by parsing its metadata in Python and dequantizing every
tensor: about half a minute for the bundled SmolLM2-135M on 2 CPU cores, paid by every
process that loads it (each run, each ``torchrun`` rank and Ray worker, each backend and
CTranslate2 conversion). :func:`dequantized` pays it once: the model, in float32 (the
dequantized values exactly), its tokenizer and chat template are written with
``save_pretrained`` into ``$XDG_CACHE_HOME/deliberation_env/gguf/<sha256 of the GGUF>-<transformers
version>`` (default ``~/.cache``; 4 bytes per weight: 0.54 GB for SmolLM2-135M), and later loads
read that folder in a fraction of a second.

The folder is named by the GGUF's bytes and the transformers version that dequantized it, so
a changed file or another transformers is converted anew. It is written into a temporary
folder and renamed into place whole, so a killed conversion leaves nothing that is reused, by
one process at a time (a lock beside it: the ranks of a job started together wait for the first).
A backend that serves cached responses identifies the model by the folder's own files
(:func:`agents.fingerprint.directory_sha256`): a folder changed after it was written is another
model, whose rows are not served to this one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from agents.cache_dirs import cache_dir
from agents.fingerprint import file_sha256


def dequantized_dir() -> Path:
    """Where dequantized models live: ``$XDG_CACHE_HOME/deliberation_env/gguf`` (default ``~/.cache``)."""
    return cache_dir("gguf")


def dequantized(gguf: str | os.PathLike[str]) -> Path:
    """The folder of ``gguf``'s model as a plain transformers model (float32) with its
    tokenizer: written on first use, then reused (see the module).

    Args:
        gguf: A GGUF file transformers can read.

    Returns:
        The folder, for ``from_pretrained``.

    Raises:
        OSError: If ``gguf`` cannot be read or the folder cannot be written.
    """
    import transformers

    gguf = Path(gguf)
    target = dequantized_dir() / f"{file_sha256(gguf)[:32]}-transformers{transformers.__version__}"
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # this user's conversions alone
    with _one_writer(target):
        if not (target / "config.json").is_file():  # not written by the process this one waited for
            _write_once(gguf, target)
    return target


@contextlib.contextmanager
def _one_writer(target: Path) -> Iterator[None]:
    """Hold a lock beside ``target`` while one process writes it: the ranks of a ``torchrun``
    job or Ray's workers started together on a new machine dequantize the file once, not
    each in its own memory at the same time (no lock where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: each may write; the first rename wins
        yield
        return
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _write_once(gguf: Path, target: Path) -> None:
    """Write ``gguf``'s folder into ``target``: into a temporary folder, renamed whole."""
    print(
        f"deliberation-env: dequantizing {gguf.name} into {target} (float32; once: later loads read it in a second)",
        file=sys.stderr,
        flush=True,
    )
    partial = Path(tempfile.mkdtemp(dir=target.parent, prefix=".partial-"))
    try:
        _write_plain(gguf, partial)
        partial.rename(target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not (target / "config.json").is_file():  # not another process's conversion of the same bytes
            raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _write_plain(gguf: Path, folder: Path) -> None:
    """Write ``gguf``'s model into ``folder`` as a plain float32 model with its tokenizer.

    transformers marks a model it read from a GGUF as quantized, and refuses to save it: the
    model is rebuilt from its config without the mark, with the same (dequantized) weights.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    config = loaded.config
    del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
