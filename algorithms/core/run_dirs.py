"""Run folders, as CleanRL names runs and TRL resumes them: every run gets its own folder,
and a run continues an earlier one only when asked.

- :func:`new_run_dir` names a fresh folder, ``runs/<command>/<family>-<name>-<YYYYmmdd-HHMMSS>``.
- :func:`open_run_dir` checks a folder before anything is written to it: without
  ``resume`` it refuses one that holds a run; with ``resume`` it refuses one whose
  recorded settings differ from this run's (but for those a resumed run may change, such
  as the number of updates). Then it records the settings in ``config.json``. A folder
  that holds nothing but a ``config.json`` is a start that failed before its first update
  (as release 0.1 left one): a new run reuses it, and says so.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "run"
>>> open_run_dir(folder, {"algo": "grpo", "updates": 2}, resume=False).name
'run'
>>> (folder / "metrics.jsonl").touch()  # the run's first update
>>> open_run_dir(folder, {"algo": "sft", "updates": 4}, resume=True, may_change=("updates",))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: cannot resume the run in ... with other settings: algo is 'grpo' there and 'sft' here; \
resume with its settings, or start a new run (without --resume, in another folder)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

CONFIG = "config.json"
"""The file that records a run's settings in its folder."""
RUN_FILES = (CONFIG, "checkpoint.safetensors", "metrics.jsonl")
"""Files whose presence means that a folder holds a run."""


def new_run_dir(command: str, family: str, name: str, root: str | Path = "runs") -> Path:
    """A folder no run uses yet: ``<root>/<command>/<family>-<name>-<YYYYmmdd-HHMMSS>``, with
    ``-2``, ``-3``, ... added when two runs start in the same second.

    Args:
        command: The command (``train``, ``compare``).
        family: The env family (``meta``, ``text``).
        name: What tells the run apart: the learner and seed (``softrankpo-seed0``).
        root: The folder of every run.
    """
    stem = Path(root) / command / f"{family}-{name}-{datetime.now():%Y%m%d-%H%M%S}"
    folder, k = stem, 1
    while folder.exists():
        k += 1
        folder = stem.with_name(f"{stem.name}-{k}")
    return folder


def holds_run(folder: Path) -> bool:
    """Whether ``folder`` holds a run: a checkpoint or metrics, or a config beside other
    files (a comparison's runs); a config alone is a start that failed (:func:`failed_start`)."""
    return any((folder / name).exists() for name in RUN_FILES) and not failed_start(folder)


def failed_start(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but a ``config.json``: a run that failed before
    its first update, which a new run may reuse."""
    return folder.is_dir() and [path.name for path in folder.iterdir()] == [CONFIG]


def open_run_dir(
    folder: str | Path, settings: Mapping[str, Any], resume: bool, may_change: Collection[str] = ()
) -> Path:
    """Check ``folder`` for a run with ``settings``, then record them in its ``config.json``.

    Args:
        folder: The run's folder (created if missing).
        settings: The run's settings, JSON data (nested mappings allowed).
        resume: Whether the run continues the one in ``folder``.
        may_change: Settings a resumed run may give other values (dotted for nested ones:
            ``train.updates``).

    Returns:
        ``folder`` as a path.

    Raises:
        ValueError: Before anything is written, when ``folder`` holds a run and ``resume``
            is False, or holds a run recorded with other settings and ``resume`` is True
            (a start that failed is neither: its folder is reused, with a warning).
    """
    folder = Path(folder)
    if failed_start(folder):
        warnings.warn(f"{folder} holds only the {CONFIG} of a start that failed: reusing it", stacklevel=2)
    if holds_run(folder) and not resume:
        raise ValueError(
            f"{folder} holds a run already: add --resume to continue it, or leave --run-dir out "
            "to start a new run in a folder of its own"
        )
    recorded = folder / CONFIG
    if resume and holds_run(folder) and recorded.exists():
        differences = changed_settings(json.loads(recorded.read_text(encoding="utf-8")), settings, may_change)
        if differences:
            raise ValueError(
                f"cannot resume the run in {folder} with other settings: {'; '.join(differences)}; "
                "resume with its settings, or start a new run (without --resume, in another folder)"
            )
    folder.mkdir(parents=True, exist_ok=True)
    recorded.write_text(json.dumps(settings, indent=2, default=str), encoding="utf-8")
    return folder


def changed_settings(
    before: Mapping[str, Any], after: Mapping[str, Any], may_change: Collection[str] = ()
) -> list[str]:
    """``"name is X there and Y here"`` for every setting of ``before`` or ``after`` that
    differs, but those in ``may_change``; values compared as JSON data.

    >>> changed_settings({"env": {"team": "simulated"}, "updates": 2}, {"env": {"team": "smollm2"}, "updates": 4}, ["updates"])
    ["env.team is 'simulated' there and 'smollm2' here"]
    """
    old, new = flat(json.loads(json.dumps(before, default=str))), flat(json.loads(json.dumps(after, default=str)))
    return [
        f"{name} is {old.get(name)!r} there and {new.get(name)!r} here"
        for name in sorted(old.keys() | new.keys())
        if name not in may_change and old.get(name) != new.get(name)
    ]


def flat(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one mapping with dotted names (``{"env.team": ...}``)."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if isinstance(value, Mapping):
            out.update(flat(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out
