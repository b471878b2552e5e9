"""Run folders, as CleanRL names runs and TRL resumes them: every run gets its own folder,
and a run continues an earlier one only when asked.

- :func:`named_run` gives a run its folder: :func:`new_run_dir` names a fresh one,
  ``runs/<command>/<family>-<name>-<YYYYmmdd-HHMMSS>``; :func:`check_resume` refuses
  ``resume`` without a run to continue.
- :func:`open_run_dir` checks a folder before anything is written to it: without
  ``resume`` it refuses one that holds a run; with ``resume`` it refuses one whose
  recorded settings differ from this run's (but for those a resumed run may change, such
  as the number of updates). Then it records the settings in ``config.json``. A folder
  that holds nothing but a ``config.json`` (and the evaluation logged before the first
  update) is a start that failed before its first update: a new run reuses it, and says so.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp()) / "run"
>>> open_run_dir(folder, {"algo": "grpo", "updates": 2}, resume=False).name
'run'
>>> _ = (folder / "metrics.jsonl").write_text('{"step": 1}')  # the run's first update
>>> open_run_dir(folder, {"algo": "sft", "updates": 4}, resume=True, may_change=("updates",))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: cannot resume the run in ... with other settings: algo is 'grpo' there and 'sft' here; \
resume with its settings (--config .../config.json --resume gives them back), or start a new run (without \
--resume, in another folder)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import warnings
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from algorithms.core.config import ADDED_OWN_SETTINGS, ADDED_SETTINGS, RunConfig

CONFIG = "config.json"
"""The file that records a run's settings in its folder."""
METRICS = "metrics.jsonl"
"""A run's log, one JSON line per update (:mod:`algorithms.core.metrics`)."""
RUN_FILES = (CONFIG, "checkpoint.safetensors", METRICS)
"""Files whose presence means that a folder holds a run."""
KEPT = "checkpoints"
"""A run folder's folder of kept checkpoints (:func:`algorithms.core.run.keep_checkpoint`),
each ``update-NNNNNN/``."""
OPENED: list[tuple[Path, str]] = []
"""Every folder :func:`open_run_dir` opened in this process, with the option that names
it, first to last: what the command line names when a command is interrupted
(:func:`resume_hint`)."""


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
    """Whether ``folder`` holds a run that failed before its first update, which a new run
    may reuse: its ``config.json`` and at most the evaluation logged before the first
    update (``metrics.jsonl`` with step 0 only), nothing else."""
    if not folder.is_dir() or not (folder / CONFIG).is_file():
        return False
    if not {path.name for path in folder.iterdir()} <= {CONFIG, METRICS}:
        return False
    metrics = folder / METRICS
    lines = metrics.read_text(encoding="utf-8").splitlines() if metrics.exists() else []
    try:
        return all(json.loads(line).get("step") == 0 for line in lines if line.strip())
    except (ValueError, AttributeError):  # not a metrics file of ours: not ours to reuse
        return False


def open_run_dir(
    folder: str | Path,
    settings: Mapping[str, Any],
    resume: bool,
    may_change: Collection[str] = (),
    updates: int | None = None,
    flag: str = "--run-dir",
    resume_from: str = "",
) -> Path:
    """Check ``folder`` for a run with ``settings``, then record them in its ``config.json``.

    Args:
        folder: The run's folder (created if missing).
        settings: The run's settings, JSON data (nested mappings allowed).
        resume: Whether the run continues the one in ``folder``.
        may_change: Settings a resumed run may give other values (dotted for nested ones:
            ``train.updates``).
        updates: The updates the run is to end at, if it is one run (not a comparison's
            folder): a resumed run that has logged more is refused (:func:`check_reaches`).
        flag: The option that names ``folder``, for the messages (``--out-dir`` for a
            comparison).
        resume_from: The kept checkpoint the run resumes from (:func:`kept_checkpoint`),
            ``""``: its newest.

    Returns:
        ``folder`` as a path.

    Raises:
        ValueError: Before anything is written, when ``folder`` holds a run and ``resume``
            is False, or holds a run recorded with other settings, or past ``updates``, and
            ``resume`` is True (a start that failed is neither: its folder is reused, with a
            warning).
    """
    folder = Path(folder)
    if failed_start(folder):
        warnings.warn(f"{folder} holds only the {CONFIG} of a start that failed: reusing it", stacklevel=2)
    check_run_dir(folder, settings, resume, may_change, updates, flag, resume_from)
    recorded = folder / CONFIG
    if resume:
        _say_what_changed(folder, recorded_settings(folder), settings)
    folder.mkdir(parents=True, exist_ok=True)
    recorded.write_text(json.dumps(settings, indent=2, default=str), encoding="utf-8")
    OPENED.append((folder, flag))
    return folder


def _say_what_changed(folder: Path, before: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Warn which settings a resumed run gives otherwise than its folder recorded (those it may
    change: the others were refused), as ``config.json`` records only the new ones."""
    old, new = flat(before), flat(json.loads(json.dumps(now, default=str)))  # as recorded: tuples as lists
    unremarkable = ("recorded_by", "resume")  # the version that wrote it; a resume's own flag
    changed = [
        f"{name} {new[name]!r} (was {old[name]!r})"
        for name in new
        if name in old and old[name] != new[name] and name.rpartition(".")[2] not in unremarkable
    ]
    if changed:
        warnings.warn(f"resuming the run in {folder} with {', '.join(changed)}", stacklevel=3)


def check_run_dir(
    folder: str | Path,
    settings: Mapping[str, Any],
    resume: bool,
    may_change: Collection[str] = (),
    updates: int | None = None,
    flag: str = "--run-dir",
    resume_from: str = "",
) -> None:
    """The checks of :func:`open_run_dir`, writing nothing: a run can check its folder before
    it loads its models (the arguments as there).

    Raises:
        ValueError: As :func:`open_run_dir`.
    """
    folder = Path(folder)
    if folder.parent.name == KEPT and (folder.parent.parent / CONFIG).is_file():
        raise ValueError(
            f"{folder} is a checkpoint that the run in {folder.parent.parent} kept, not a run folder: to continue "
            f"that run from it, give {flag} {folder.parent.parent} --resume-from {folder.name} (the updates after "
            "it are dropped)"
        )
    if resume and holds_run(folder) and not (folder / CONFIG).is_file():
        raise ValueError(
            f"cannot resume {folder}: it holds a checkpoint or metrics but no {CONFIG}, so its settings cannot be "
            "checked; resume a run folder that this package wrote"
        )
    kept = kept_checkpoint(folder, resume_from) if resume_from else None
    if holds_run(folder) and not resume:
        raise ValueError(
            f"{folder} holds a run already: add --resume to continue it, or leave {flag} out "
            "to start a new run in a folder of its own"
        )
    recorded = folder / CONFIG
    if resume and holds_run(folder) and recorded.exists():
        differences = changed_settings(json.loads(recorded.read_text(encoding="utf-8")), settings, may_change)
        if differences:
            raise ValueError(
                f"cannot resume the run in {folder} with other settings: {'; '.join(differences)}; "
                f"resume with its settings (--config {folder / CONFIG} --resume gives them back), or start a new "
                "run (without --resume, in another folder)"
            )
        if updates is not None and kept is not None:  # the updates after the kept checkpoint are dropped
            update = int(kept.name.removeprefix("update-"))
            if updates < update:
                raise ValueError(f"cannot resume the run in {folder} from update {update} with --updates {updates}: give --updates {update} or more")
        elif updates is not None:
            check_reaches(folder, updates)


def kept_checkpoint(folder: str | Path, name: str) -> Path:
    """The kept checkpoint ``name`` of the run in ``folder`` (``RunConfig.resume_from``): its
    folder's name (``update-000004``), its update (``4``) or its path.

    Raises:
        ValueError: When the run kept no such checkpoint, naming those it kept.
    """
    kept = Path(folder) / KEPT
    path = Path(name)
    if len(path.parts) > 1:
        if path.resolve().parent != kept.resolve():
            raise ValueError(f"--resume-from {name} is not a checkpoint the run in {folder} kept (those are in {kept})")
        path = Path(path.name)
    number = str(path).removeprefix("update-")
    found = kept / f"update-{int(number):06d}" if number.isdigit() else None
    if found is None or not (found / "checkpoint.safetensors").is_file():
        names = sorted(p.name for p in kept.glob("update-*") if (p / "checkpoint.safetensors").is_file())
        held = f"it kept {', '.join(names)}" if names else "it kept none (--keep-checkpoints N keeps them)"
        raise ValueError(f"--resume-from {name}: the run in {folder} kept no such checkpoint; {held}")
    return found


def recorded_settings(folder: str | Path) -> dict[str, Any]:
    """The settings a run folder's ``config.json`` records (``{}`` where it has none)."""
    try:
        return json.loads((Path(folder) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def check_resumed_runs(folder: str | Path, updates: int, passed_over: Collection[str] = ()) -> None:
    """Before a resumed comparison writes anything: refuse ``updates`` below what a run in
    ``folder`` has logged (its runs' folders hold ``metrics.jsonl``; those under a top-level
    folder of ``passed_over``, such as the warm starts' ``sft``, run their own length).

    Raises:
        ValueError: Naming the run and the updates it has logged (:func:`check_reaches`).
    """
    folder = Path(folder)
    for log in sorted(folder.rglob(METRICS)):
        run = log.parent
        if set(run.relative_to(folder).parts[:1]) & set(passed_over):
            continue
        check_reaches(run, updates)


def resume_hint() -> str:
    """What to do after an interruption: continue the first folder opened in this process
    (the command's own) where it holds a checkpoint, else start again."""
    if not OPENED:
        return ""
    folder, flag = OPENED[0]
    if any((path / "checkpoint.safetensors").is_file() for path in (folder, *folder.rglob("*")) if path.is_dir()):
        return f": the same command with {flag} {folder} --resume continues from the last checkpoint"
    if not holds_run(folder):  # a start that failed: the same command reuses the folder
        return f": {folder} holds no checkpoint yet, so there is nothing to resume; run the command again"
    return (  # updates logged, none checkpointed: the same command alone is refused ("holds a run already")
        f": {folder} holds no checkpoint yet, so there is nothing to resume; the same command with "
        f"{flag} {folder} --resume starts it over (or remove the folder)"
    )


def check_reaches(run: Path, updates: int) -> None:
    """Refuse to resume the run in ``run`` with ``updates`` below what it has logged: it
    cannot end before where it is, and its record would say it had.

    Raises:
        ValueError: Naming the run and the updates it has logged.
    """
    logged = logged_updates(run)
    if logged > updates:
        raise ValueError(
            f"cannot resume the run in {run} with --updates {updates}: it has logged {logged} updates "
            f"already; give --updates {logged} or more to continue it"
        )


def logged_updates(folder: Path) -> int:
    """The last update a run folder's metrics log holds (0 without one)."""
    path = folder / METRICS
    if not path.exists():
        return 0
    steps = [json.loads(line).get("step", 0) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return max(steps, default=0)


def changed_settings(
    before: Mapping[str, Any], after: Mapping[str, Any], may_change: Collection[str] = ()
) -> list[str]:
    """``"name is X there and Y here"`` for every setting of ``before`` or ``after`` that
    differs, but those in ``may_change``; values compared as JSON data. A setting added
    since ``before`` was recorded (:data:`~algorithms.core.config.ADDED_SETTINGS`) is no
    difference where ``after`` gives the value every run then trained with.

    >>> changed_settings({"env": {"team": "simulated"}, "updates": 2}, {"env": {"team": "smollm2"}, "updates": 4}, ["updates"])
    ["env.team is 'simulated' there and 'smollm2' here"]
    """
    old, new = flat(json.loads(json.dumps(before, default=str))), flat(json.loads(json.dumps(after, default=str)))
    names = old.keys() | new.keys()
    if old.get("algo") != new.get("algo"):  # another learner: its own settings are no difference to list
        names = (old.keys() & new.keys()) | {"algo"}
    return [
        f"{name} is {_shown(name, _as_then(name, old))} there and {_shown(name, new.get(name))} here"
        for name in sorted(names)
        if name not in may_change and _as_then(name, old) != new.get(name)
    ]


def _shown(name: str, value: Any) -> str:
    """``value`` of the setting ``name`` as a refusal shows it: a setting of
    :data:`WHOLE_SETTINGS` as the JSON its option takes (``{"enable_thinking": false}``,
    what ``--chat-template-kwargs`` is given), any other as Python writes it.

    >>> _shown("chat_template_kwargs", {"enable_thinking": False}), _shown("dtype", "bfloat16")
    ('{"enable_thinking": false}', "'bfloat16'")
    """
    if name.rpartition(".")[2] in WHOLE_SETTINGS and isinstance(value, Mapping):
        return json.dumps(value)
    return repr(value)


def _as_then(name: str, old: Mapping[str, Any]) -> Any:
    """The value of ``name`` in the record ``old``; for a setting added since it was
    recorded, the value every run then trained with (None for any other it lacks)."""
    if name in old:
        return old[name]
    return ADDED_OWN_SETTINGS.get(name, ADDED_SETTINGS.get(name.rpartition(".")[2]))


WHOLE_SETTINGS = frozenset({"chat_template_kwargs"})
"""Settings whose value is a mapping of names the user chose (a chat template's variables):
compared whole, as one setting, not name by name (a variable named ``top_k`` is no
``top_k`` setting, and a record made before the setting existed reads as its value then,
``{}``: :data:`~algorithms.core.config.ADDED_SETTINGS`)."""


def flat(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one mapping with dotted names (``{"env.team": ...}``), but those of
    :data:`WHOLE_SETTINGS`, kept whole."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if isinstance(value, Mapping) and name not in WHOLE_SETTINGS:
            out.update(flat(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def named_run(run: RunConfig, family: str, name: str) -> RunConfig:
    """``run`` with its folder: the one it names, a new one (:func:`new_run_dir`, not made
    yet) for ``""``, none for ``None``."""
    if run.run_dir == "":
        return dataclasses.replace(run, run_dir=str(new_run_dir("train", family, name)))
    return run


@contextlib.contextmanager
def removed_if_nothing_ran(folder: str | Path) -> Iterator[None]:
    """Remove ``folder`` when the block fails (an error, Ctrl-C) before any run in it made
    an update, if the block made the folder: a comparison that could not start leaves no
    folder behind, as a run that could not start leaves none."""
    folder = Path(folder)
    made_here = not folder.exists()
    try:
        yield
    except BaseException:
        if made_here and folder.is_dir() and not any(holds_run(path) for path in folder.rglob("*") if path.is_dir()):
            shutil.rmtree(folder, ignore_errors=True)
        raise


def check_resume(resume: bool, run_dir: str | None, flag: str = "--run-dir") -> None:
    """Refuse ``resume`` without a folder that holds a run, naming what is missing (and
    ``flag``, the option that names the folder).

    Raises:
        ValueError: Without ``run_dir``, or when it holds no run (or only a failed start).
    """
    if not resume:
        return
    if not run_dir:
        raise ValueError(f"--resume continues the run in {flag}: give its folder (--resume-from too, or the kept checkpoint's path)")
    if failed_start(Path(run_dir)):
        raise ValueError(
            f"--resume: {run_dir} holds only the {CONFIG} of a start that failed, no run to continue: "
            "leave --resume out (the folder is reused)"
        )
    if not holds_run(Path(run_dir)):
        raise ValueError(f"--resume: {run_dir} holds no run to continue (no {CONFIG}, checkpoint or metrics)")
