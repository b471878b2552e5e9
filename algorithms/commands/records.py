"""A run's ``config.json`` as the commands read it: whose run it records
(:func:`family_of`), and its settings as a config file (:func:`settings_of_run`), what
``--config RUN/config.json --resume`` (:mod:`algorithms.cli`) and ``deliberate evaluate``
(:mod:`algorithms.commands.evaluate`) build a learner's config from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from algorithms.core.run_dirs import CONFIG, holds_run
from algorithms.meta.config import RECORDED_BY, WARM_START_DIGEST
from algorithms.text.config import MACHINE_RECORDS

RUN_MARKS = {"text": MACHINE_RECORDS, "meta": (RECORDED_BY, WARM_START_DIGEST)}
"""What each family's runs record in their ``config.json`` beside the settings, which marks
the file as that family's run's (wherever it lies): a text run records the machine and the
weights, a meta run the package that wrote it."""
INVOCATION = ("resume", "progress")
"""What a run's ``config.json`` records of the command that last ran it rather than of the
run: ``--config <run>/config.json`` takes them from the command line alone."""


def family_of(record: dict[str, Any]) -> str | None:
    """The family whose run recorded ``record`` (a ``config.json``'s fields, :data:`RUN_MARKS`);
    None for none (a comparison's, or no file).

    >>> family_of({"algo": "grpo", "recorded_by": "deliberation-env 0.2.0"}), family_of({"algos": ["grpo"]})
    ('meta', None)
    """
    return next((family for family, marks in RUN_MARKS.items() if any(key in record for key in marks)), None)


def in_its_run_folder(path: Path) -> bool:
    """Whether ``path`` is the ``config.json`` of the run in its own folder."""
    return path.name == CONFIG and holds_run(path.parent)


def settings_of_run(path: Path, data: dict[str, Any], family: str, args: list[str]) -> dict[str, Any]:
    """The settings of a run's ``config.json`` (``data``, a learner's of ``family``) as a
    config file: the run is the folder that holds the file (the folder it records may be
    another: the run was moved or copied; a record copied out of its folder names none, so a
    new run gets a folder of its own), what it records of the last command
    (:data:`INVOCATION`) and of the machine are left out, and so is an import path of
    ``protocol`` where the command line ``args`` give ``--protocol``.
    """
    data = {key: value for key, value in data.items() if key not in (*INVOCATION, WARM_START_DIGEST, RECORDED_BY)}
    run = data if family == "text" else dict(data.get("run") or {})
    for name in (*INVOCATION, "run_dir"):
        run.pop(name, None)
    if in_its_run_folder(path):
        run["run_dir"] = str(path.parent)
    if family != "text":
        data["run"] = run
    if family == "text" and any(arg == "--protocol" or arg.startswith("--protocol=") for arg in args):
        data.pop("protocol", None)  # the command line names it (a file may not: it runs code)
    return data
