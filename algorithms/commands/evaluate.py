"""``deliberate evaluate {meta,text}``: a trained run's newest checkpoint, played again on
held-out problems.

A run of ``deliberate train FAMILY`` records its settings in its folder's ``config.json`` and
its weights in ``checkpoint.safetensors``. ``deliberate evaluate FAMILY --run-dir RUN``
rebuilds the run's config from that file as ``--config RUN/config.json --resume`` reads it,
loads the newest checkpoint, and plays the first ``--eval-problems`` problems of ``--split``
(the whole split without it; more than the split has: the split, said and recorded) once
each, greedily and scored strictly, with the held-out env and the evaluation of the run's
own held-out evaluations: on the run's problems, the numbers it logged at that update. It
prints a table and writes ``RUN/evaluations/<split>-<N>problems-update<K>.json``; the run's
own files are read only.

This module is what both families share: the run's record (:func:`run_record`: a folder of
another family's run, a comparison's or none is refused before any model loads), its
checkpoint (:func:`newest_checkpoint`), and the evaluation's file and table
(:func:`evaluation_record`, :func:`write_evaluation`, of either family's
:class:`~algorithms.core.evaluation.Evaluation`). Each family's command is a module of its
own: :mod:`algorithms.commands.evaluate_meta`, :mod:`algorithms.commands.evaluate_text`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from algorithms.commands.common import console, wrote
from algorithms.commands.records import family_of
from algorithms.core.run_dirs import CONFIG, recorded_settings

if TYPE_CHECKING:
    from rich.table import Table

    from algorithms.core.evaluation import Evaluation

EVALUATIONS = "evaluations"
"""The folder of a run's evaluations by ``deliberate evaluate``, one JSON file each."""


@dataclass
class EvaluateRun:
    """What ``deliberate evaluate meta`` and ``evaluate text`` both take (each family's
    command adds its own settings)."""

    run_dir: str
    """The run's folder (what ``train --run-dir`` named): its ``config.json`` and
    ``checkpoint.safetensors``, the newest."""
    eval_problems: int | None = None
    """Problems to play, the split's first N (at most the split's: more is said, and the
    number played recorded); None: every problem of the split."""
    split: Literal["test", "train"] = "test"
    """The split whose problems are played: ``test``, held out; ``train``, those it trained on."""
    progress: bool = True
    """Show a progress bar."""

    def __post_init__(self) -> None:
        if self.eval_problems is not None and self.eval_problems < 1:
            raise ValueError(f"--eval-problems must be >= 1, got {self.eval_problems}")


def run_record(folder: Path, family: str) -> dict[str, Any]:
    """The ``config.json`` of the run of ``family`` (``meta`` or ``text``) in ``folder``
    (:func:`~algorithms.commands.records.family_of`).

    Raises:
        ValueError: On a folder that is missing, or holds no ``config.json``, or another
            family's run (naming the command that evaluates it), or a comparison's (naming
            its runs' folders), or no run.
    """
    if not folder.is_dir():
        raise ValueError(f"--run-dir {folder}: no such folder (give the folder of a run of deliberate train {family})")
    record = recorded_settings(folder)
    found = family_of(record)
    if found == family:
        return record
    if found is not None:
        raise ValueError(
            f"{folder} holds a {found} run, not a {family} run: evaluate it with deliberate evaluate {found} --run-dir {folder}"
        )
    runs = comparison_runs(folder)
    if runs:
        raise ValueError(f"{folder} is a comparison's folder: evaluate one of its runs ({', '.join(runs[:4])}{', ...' if len(runs) > 4 else ''})")
    if not record:
        raise ValueError(f"{folder} holds no {CONFIG}: no run of deliberate train {family} (give the folder that train {family} --run-dir named)")
    raise ValueError(f"{folder} holds no run of deliberate train {family}: its {CONFIG} records none")


def comparison_runs(folder: Path) -> list[str]:
    """The folders of the runs of the comparison in ``folder``, sorted: ``<algo>/seed<k>`` of
    ``compare text``; ``sft/seed<k>`` and ``scale<s>/<algo>/seed<k>`` of ``compare meta``."""
    configs = [*folder.glob(f"*/*/{CONFIG}"), *folder.glob(f"*/*/*/{CONFIG}")]
    return sorted(str(path.parent) for path in configs if family_of(recorded_settings(path.parent)))


def newest_checkpoint(folder: Path) -> Path:
    """The checkpoint the run in ``folder`` would resume from, its newest.

    Raises:
        ValueError: On a run that holds none (it stopped before its first), or only a
            pickled ``checkpoint.pt`` of release 0.1 (refused unread).
    """
    from algorithms.core.checkpoints import resume_checkpoint

    checkpoint = resume_checkpoint(folder)
    if checkpoint is None:
        raise ValueError(f"the run in {folder} holds no checkpoint yet (it stopped before its first): there are no trained weights to evaluate")
    return checkpoint


def evaluation_record(
    cfg: Any,
    evaluation: Evaluation,
    algo: str,
    update: int,
    checkpoint: Path,
    count: int,
    settings: dict[str, Any],
    elapsed: float,
) -> dict[str, Any]:
    """What ``RUN/evaluations/*.json`` holds: the command's settings ``cfg``, the version and
    date (:func:`~algorithms.commands.run.record_header`), the learner ``algo``, the
    checkpoint (its ``update`` and SHA-256), the split and the problems played (``count``),
    the family's ``settings`` of the play (text: the envs at a time, device, dtype and
    processes; meta: the envs at a time, the episodes' seed and the env's workers), and the
    evaluation."""
    from agents.fingerprint import file_sha256
    from algorithms.commands.run import record_header

    return {
        **record_header(cfg, elapsed),
        "algo": algo,
        "update": update,
        "checkpoint": checkpoint.name,
        "checkpoint_sha256": file_sha256(checkpoint),
        "split": cfg.split,
        "problems": count,
        **settings,
        **{name: value for name, value in dataclasses.asdict(evaluation).items() if name != "metrics"},
        "metrics": evaluation.metrics,
    }


def evaluation_path(folder: Path, result: dict[str, Any]) -> Path:
    """Where the evaluation ``result`` (:func:`evaluation_record`) of the run in ``folder``
    goes: ``evaluations/<split>-<N>problems-update<K>.json``."""
    return folder / EVALUATIONS / f"{result['split']}-{result['problems']}problems-update{result['update']}.json"


def write_evaluation(folder: Path, result: dict[str, Any], started: float) -> Path:
    """Write the evaluation ``result`` of the run in ``folder`` (:func:`evaluation_path`),
    print its table and the ``wrote`` line (the time since ``started``, a
    ``time.perf_counter()``); the file written."""
    path = evaluation_path(folder, result)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2), encoding="utf-8")
    console.print(evaluation_table(result))
    wrote([path], time.perf_counter() - started)
    return path


def evaluation_table(result: dict[str, Any]) -> Table:
    """The evaluation ``result`` (:func:`evaluation_record`): the team answer's accuracy
    (meta: the plurality consensus) with its 95% interval, the asked-form share, the cut
    share, tokens per answer, then every metric."""
    from rich.table import Table

    from algorithms.commands.train import with_interval

    problems = result["problems"]
    table = Table(title=f"{result['algo']}, update {result['update']}: {problems} {result['split']} problems")
    table.add_column("metric")
    table.add_column("value", justify="right")
    headline = {
        "team answer accuracy (95% CI)": None if result["accuracy"] is None else with_interval(result["accuracy"], problems),
        "asked-form share": result["answered_share"],
        "cut share": result["cut_share"],
        "tokens per answer": result["tokens_per_answer"],
    }
    for name, value in {**headline, **result["metrics"]}.items():
        if value is not None:
            table.add_row(name, value if isinstance(value, str) else f"{value:.3f}")
    table.caption = "each problem played once, greedily, scored strictly: as the run's own held-out eval/*"
    return table
