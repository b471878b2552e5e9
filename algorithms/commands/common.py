"""What the commands share: the console, the closing "wrote ..." line, and checks that
name a mistake in command-line terms before any work starts."""

from __future__ import annotations

import difflib
import itertools
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console

# a terminal's own width; logs, pipes and CI get 140 columns, so the tables keep every column whole
console = Console(width=shutil.get_terminal_size().columns if sys.stdout.isatty() else 140)


def wrote(paths: Iterable[Path | str], seconds: float | None = None) -> None:
    """Print ``wrote <paths>`` (and the time the command took), the line every command that
    writes files ends with."""
    took = "" if seconds is None else f" ({seconds:.0f} s)"
    console.print(f"wrote {', '.join(str(path) for path in paths)}{took}", soft_wrap=True)


def wrote_folder(folder: Path, seconds: float | None = None) -> None:
    """Print ``wrote <folder>/: <its files and folders>``, the line a run's command ends with:
    with ``seconds`` (what the command took), those written in that time (a file of one's
    own in the folder is not listed as written)."""
    since = None if seconds is None else time.time() - seconds - 1  # a second's slack for coarse clocks
    entries = [
        path.name + ("/" if path.is_dir() else "")
        for path in sorted(folder.iterdir())
        if since is None or any(_modified(part) >= since for part in itertools.chain([path], path.rglob("*") if path.is_dir() else ()))
    ]
    took = "" if seconds is None else f" ({seconds:.0f} s)"
    console.print(f"wrote {folder}/: {', '.join(entries)}{took}", soft_wrap=True)


def _modified(path: Path) -> float:
    """When ``path`` itself (a link, not what it points to) was last modified; 0 where it
    cannot be read."""
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def did_you_mean(given: str, accepted: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``accepted`` (difflib), or ``""``.

    >>> did_you_mean("gsm8", ["arithmetic", "gsm8k", "math"])
    "; did you mean 'gsm8k'?"
    """
    close = difflib.get_close_matches(given, accepted, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_choice(flag: str, given: str, accepted: Sequence[str]) -> None:
    """Raise a ``ValueError`` naming ``flag``, the value given and those accepted, unless
    ``given`` is one of ``accepted``.

    >>> check_choice("--task", "gsm8", ["arithmetic", "gsm8k"])
    Traceback (most recent call last):
    ...
    ValueError: --task 'gsm8' is not one of arithmetic, gsm8k; did you mean 'gsm8k'?
    """
    if given not in accepted:
        raise ValueError(f"{flag} {given!r} is not one of {', '.join(accepted)}{did_you_mean(given, accepted)}")


def quiet_libraries(progress: bool) -> None:
    """Without ``progress`` (``--no-progress``): no progress bars of transformers and the
    Hugging Face hub either (downloads, "Writing model shards")."""
    if not progress:
        import huggingface_hub.utils
        import transformers.utils.logging

        transformers.utils.logging.disable_progress_bar()
        huggingface_hub.utils.disable_progress_bars()
