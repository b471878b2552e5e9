"""The one run loop of every learner, either family: updates, progress, metrics, evaluation,
checkpoints and resume.

:func:`run` drives any learner with ``train_step``, ``save``, ``load`` and the counters
``update`` and ``episodes`` (:class:`Runnable`; both families' learners are one,
:class:`~algorithms.core.learner.Learner`) by one set of rules:

- **Resume.** With ``run_dir`` holding ``checkpoint.safetensors`` (and ``resume``), the
  learner continues from it; metric lines logged after it (a run killed between two
  checkpoints) are dropped, so a resumed run repeats no update and no log line (one
  resumed before its first checkpoint starts over, its earlier lines dropped).
- **Metrics.** One JSON line per update in ``run_dir/metrics.jsonl``
  (:class:`~algorithms.core.metrics.MetricLogger`; TensorBoard and Weights & Biases if asked).
- **Evaluation.** ``evaluate()``, if given, runs before a fresh run's first update (logged
  as step 0), every ``eval_interval`` updates and after the last one, its metrics joining
  that update's.
- **Checkpoints.** Every ``checkpoint_interval`` updates and after the last one (0: after the
  last one only), written atomically; with ``keep_checkpoints``, each is also kept as
  ``checkpoints/update-NNNNNN/`` (:func:`keep_checkpoint`), the newest ``keep_checkpoints``
  of them.

The settings are a :class:`~algorithms.core.config.RunConfig`, the ``run`` part of every
learner config; here a ``run_dir`` of ``""`` or ``None`` writes nothing (each family's
``train`` names a new folder for ``""`` before it calls :func:`run`).
- **Several processes** (``torchrun``, :mod:`algorithms.core.data_parallel`): rank 0 alone
  writes the metrics and checkpoints and shows the bar; every rank resumes from the
  checkpoint (so on several nodes ``run_dir`` must be a folder every node sees) and calls
  ``evaluate`` at the same updates (a learner's evaluation may share its problems among them).

Held-out evaluations of both families play their problems a vector env at a time
(:func:`padded_batches`).
"""

from __future__ import annotations

import json
import numbers
import os
import shutil
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from algorithms.core import data_parallel
from algorithms.core.checkpoints import CHECKPOINT, resume_checkpoint
from algorithms.core.config import RunConfig
from algorithms.core.metrics import LOG_FIELDS, METRICS, MetricLogger, read_metrics
from algorithms.core.run_dirs import KEPT, kept_checkpoint, logged_updates


class Runnable(Protocol):
    """What :func:`run` drives."""

    name: str
    update: int

    @property
    def episodes(self) -> int:
        """Training episodes played so far."""

    def train_step(self) -> dict[str, float]:
        """One update; its metrics."""

    def save(self, path: str | Path) -> None:
        """Write a checkpoint."""

    def load(self, path: str | Path) -> None:
        """Continue from a checkpoint."""

    # optional: ``adapters_dir``, a folder that ``save`` writes beside the checkpoint (the
    # LLM-weight learners' LoRA adapters), kept with it by :func:`keep_checkpoint`


@dataclass
class RunResult:
    """What :func:`run` returns.

    Attributes:
        history: The metrics of every update of the run: a resumed run's earlier updates
            are read from its log (on rank 0; another rank holds this call's updates).
        evaluation: The last evaluation's metrics (from the log when the run had already
            finished); empty without ``evaluate``.
        first: The evaluation before the first update (from the log when the run was
            resumed); empty without ``evaluate``.
    """

    history: list[dict[str, float]]
    evaluation: dict[str, float]
    first: dict[str, float]


@dataclass
class TrainResult:
    """What each family's ``train(config)`` returns (:func:`algorithms.meta.train`,
    :func:`algorithms.text.train`).

    Attributes:
        learner: The trained learner (a text learner's ``lm`` holds the trained weights; a
            meta learner's ``policy()`` is the greedy policy evaluations play).
        history: The metrics of every update of the run (:attr:`RunResult.history`).
        before: The held-out evaluation before training (empty without ``eval_problems``).
        after: The same after training.
        run_dir: The run's folder (the one named for ``run_dir=""``); None without one.
    """

    learner: Any
    history: list[dict[str, float]]
    before: dict[str, float]
    after: dict[str, float]
    run_dir: str | None = None


def run(
    learner: Runnable,
    config: RunConfig,
    evaluate: Callable[[], dict[str, float]] | None = None,
    settings: dict[str, Any] | None = None,
    headline: str = "rewards/total/mean",
    label: str = "",
) -> RunResult:
    """Run ``learner`` until ``learner.update == config.updates`` by the rules of the module
    docstring.

    Args:
        learner: The learner (resumed from ``config.run_dir`` if it holds a checkpoint).
        config: The run's settings.
        evaluate: Held-out metrics of the learner's current policy; None: no evaluation.
        settings: The run's settings as Weights & Biases records them.
        headline: The metric the progress bar shows.
        label: The progress bar's label; ``""``: the learner's name.

    Returns:
        A :class:`RunResult`.
    """
    ranks = data_parallel.current()
    logger = _open(learner, config, settings, ranks)
    evaluation: dict[str, float] = {}
    first: dict[str, float] = {}
    if evaluate is not None and learner.update == 0:
        evaluation = first = evaluate()
        if logger is not None:
            logger.log(0, 0, evaluation)
    history = []
    bar = tqdm(
        total=config.updates,
        initial=min(learner.update, config.updates),
        desc=label or learner.name,
        disable=not (config.progress and ranks.writes),
        leave=False,
    )
    while learner.update < config.updates:
        metrics = _checked_metrics(learner.train_step(), learner)
        last = learner.update == config.updates
        if evaluate is not None and (last or _every(learner.update, config.eval_interval)):
            evaluation = evaluate()
            metrics.update(evaluation)
        history.append(metrics)
        bar.update(1)
        bar.set_postfix({headline.split("/")[1]: f"{metrics.get(headline, float('nan')):.3f}"})
        if logger is not None:  # logged first: a line after the checkpoint is dropped on resume
            logger.log(learner.update, learner.episodes, metrics)
            if last or _every(learner.update, config.checkpoint_interval):
                learner.save(logger.run_dir / CHECKPOINT)
                if config.keep_checkpoints:
                    keep_checkpoint(logger.run_dir, learner.update, config.keep_checkpoints, getattr(learner, "adapters_dir", None))
    bar.close()
    if logger is not None:
        logger.close()
        if len(history) < learner.update:  # resumed: the updates of earlier calls are in the log
            history = _logged_updates(logger.path)
        if evaluate is not None and not evaluation:  # a finished run resumed: its last evaluation is logged
            evaluation = _last_evaluation(logger.path)
        if evaluate is not None and not first:  # a resumed run: its first evaluation is logged
            first = _first_evaluation(logger.path)
    if config.run_dir and evaluate is not None:
        evaluation, first = data_parallel.broadcast_object((evaluation, first))  # rank 0 read the log
    return RunResult(history, evaluation, first)


def _open(
    learner: Runnable, config: RunConfig, settings: dict[str, Any] | None, ranks: data_parallel.Ranks
) -> MetricLogger | None:
    """Resume ``learner`` from ``config.run_dir`` and open its metric log (None without a
    run_dir, and on every rank but 0).

    Raises:
        ValueError: When the ranks resumed from different updates (a run folder that not
            every node sees), or, before anything is written, when ``run_dir`` holds a run
            that trained (a checkpoint, or logged updates) and ``resume`` is not asked:
            starting over would overwrite its log and checkpoint.
    """
    if not config.run_dir:
        return None
    folder = Path(config.run_dir)
    _refuse_a_run_not_resumed(folder, config)
    checkpoint = resume_checkpoint(folder) if config.resume else None  # refuses a pickled checkpoint.pt
    kept = kept_checkpoint(folder, config.resume_from) if config.resume_from else None
    if kept is not None:
        checkpoint = kept / CHECKPOINT
    if checkpoint is not None:
        learner.load(checkpoint)
    updates = data_parallel.all_gather_objects(learner.update)
    if len(set(updates)) > 1:
        raise ValueError(
            f"the processes resumed {folder} at updates {updates} (by rank): on several nodes, "
            "--run-dir must be a folder that every node sees (a shared file system)"
        )
    if not ranks.writes:
        return None
    # A run not resumed from a checkpoint starts its log over (its folder was checked: a
    # start that failed, or one resumed before its first checkpoint); a resumed run drops
    # the lines logged after its checkpoint.
    if config.resume and checkpoint is None and (folder / METRICS).exists() and _logged_updates(folder / METRICS):
        warnings.warn(
            f"{folder} holds logged updates but no checkpoint (the run stopped before its first one, "
            "--checkpoint-interval): it starts over from update 0",
            stacklevel=2,
        )
    if kept is not None:  # the kept checkpoint becomes the run's newest
        restore_kept(kept, folder, getattr(learner, "adapters_dir", None))
    _keep_metrics_until(folder / METRICS, learner.update if checkpoint is not None else -1)
    return MetricLogger(folder, config.tensorboard, config.wandb_project, config=settings)


def _refuse_a_run_not_resumed(folder: Path, config: RunConfig) -> None:
    """Refuse to start a new run in ``folder`` where one trained (a checkpoint, or an update
    logged), unless ``config`` resumes it: the family's ``train`` and the command line check
    their folders first (:func:`~algorithms.core.run_dirs.open_run_dir`); a learner's own
    ``learn(RunConfig(run_dir=...))`` comes here directly."""
    if config.resume or config.resume_from:
        return
    updates = logged_updates(folder)
    if updates or (folder / CHECKPOINT).exists():
        raise ValueError(
            f"{folder} holds a run ({updates} updates logged{', and a checkpoint' if (folder / CHECKPOINT).exists() else ''}): "
            "continue it with resume=True (--resume), or give another run_dir; nothing was written"
        )


def keep_checkpoint(run_dir: Path, update: int, keep: int, adapters_dir: Path | None = None) -> Path:
    """Keep the checkpoint just written in ``run_dir`` (and ``adapters_dir``, where it was
    written with it) as ``run_dir/checkpoints/update-NNNNNN/``, then remove the oldest kept
    beyond the newest ``keep``. Files are hard-linked where the file system allows (the
    checkpoint and adapters are replaced by renames, so a link keeps this update's bytes),
    else copied; the copy is made beside its place and renamed into it, whole or not at all.
    Kept checkpoints of this update or later ones are of a future the run abandoned (it was
    resumed from an older checkpoint) and go first.

    Returns:
        The kept folder: ``checkpoint.safetensors`` (it loads with ``learner.load``) and,
        with adapters, ``adapters/`` (it loads with plain peft, as the run's own).
    """
    kept = run_dir / KEPT
    target, staged = kept / f"update-{update:06d}", kept / f".update-{update:06d}-writing"
    for leftover in kept.glob(".update-*-writing"):  # a copy a killed run left half made
        shutil.rmtree(leftover, ignore_errors=True)
    for later in _kept_updates(kept):  # a run resumed from an older checkpoint: its abandoned future goes
        if later[0] >= update:
            shutil.rmtree(later[1], ignore_errors=True)
    staged.mkdir(parents=True)
    _link_or_copy(run_dir / CHECKPOINT, staged / CHECKPOINT)
    if adapters_dir is not None and Path(adapters_dir).is_dir():
        for source in Path(adapters_dir).rglob("*"):
            if source.is_file():
                _link_or_copy(source, staged / "adapters" / source.relative_to(adapters_dir))
    staged.rename(target)
    for _, old in _kept_updates(kept)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def restore_kept(kept: Path, run_dir: Path, adapters_dir: Path | None = None) -> None:
    """Make the kept checkpoint ``kept`` (:func:`keep_checkpoint`) the newest of the run in
    ``run_dir``: its checkpoint replaces the run's (and its adapters those in
    ``adapters_dir``), each made beside its place and renamed into it, and the kept
    checkpoints after it, a future the run abandons, are removed."""
    staged = run_dir / f".{CHECKPOINT}-restoring"
    staged.unlink(missing_ok=True)
    _link_or_copy(kept / CHECKPOINT, staged)
    staged.replace(run_dir / CHECKPOINT)
    if adapters_dir is not None and (kept / "adapters").is_dir():
        adapters_dir = Path(adapters_dir)
        fresh, old = adapters_dir.with_name(f".{adapters_dir.name}-restoring"), adapters_dir.with_name(f".{adapters_dir.name}-old")
        for leftover in (fresh, old):
            shutil.rmtree(leftover, ignore_errors=True)
        for source in (kept / "adapters").rglob("*"):
            if source.is_file():
                _link_or_copy(source, fresh / source.relative_to(kept / "adapters"))
        if adapters_dir.exists():
            adapters_dir.rename(old)
        fresh.rename(adapters_dir)
        shutil.rmtree(old, ignore_errors=True)
    update = int(kept.name.removeprefix("update-"))
    for later, path in _kept_updates(kept.parent):
        if later > update:
            shutil.rmtree(path, ignore_errors=True)


def _kept_updates(kept: Path) -> list[tuple[int, Path]]:
    """The kept checkpoints' folders in ``kept`` with their updates, oldest first."""
    numbered = ((path.name.removeprefix("update-"), path) for path in kept.glob("update-*"))
    return sorted((int(number), path) for number, path in numbered if number.isdigit())


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source``, or a copy where links are refused."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _checked_metrics(metrics: Any, learner: Any) -> dict[str, float]:
    """``metrics`` of ``learner``'s update, refused unless a mapping of names to numbers
    (the logs, tables and bars format them as numbers).

    Raises:
        TypeError: Naming the learner and the metric.
    """
    name = type(learner).__name__
    if not isinstance(metrics, Mapping):
        raise TypeError(f"{name}.train_step must return its metrics as a dict of names to numbers, got {type(metrics).__name__}")
    for key, value in metrics.items():
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name}.train_step's metric {key!r} is {value!r} ({type(value).__name__}): metrics are numbers")
    return metrics if isinstance(metrics, dict) else dict(metrics)


def _every(update: int, interval: int) -> bool:
    """Whether ``update`` is one of every ``interval``-th (never for interval 0)."""
    return bool(interval) and update % interval == 0


def _keep_metrics_until(path: Path, update: int) -> None:
    """Drop the lines of ``path`` logged after ``update`` (a run killed after its checkpoint;
    -1: all of them, a run killed before its first checkpoint starts over)."""
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(line for line in lines if json.loads(line)["step"] <= update), encoding="utf-8")


def _logged_updates(path: Path) -> list[dict[str, float]]:
    """The metrics of every update a metrics file holds, in order (its step 0, the
    evaluation before training, is :func:`_first_evaluation`'s)."""
    return [
        {k: v for k, v in record.items() if k not in LOG_FIELDS}
        for record in read_metrics(path)
        if record["step"] >= 1
    ]


def _last_evaluation(path: Path) -> dict[str, float]:
    """The ``eval/*`` metrics of the last record of a metrics file that has any."""
    for record in reversed(read_metrics(path)):
        evaluation = {k: v for k, v in record.items() if k.startswith("eval/")}
        if evaluation:
            return evaluation
    return {}


def _first_evaluation(path: Path) -> dict[str, float]:
    """The ``eval/*`` metrics logged before a run's first update (step 0), if any."""
    for record in read_metrics(path):
        if record["step"] == 0:
            return {k: v for k, v in record.items() if k.startswith("eval/")}
    return {}


def padded_batches(indices: Sequence[int], size: int) -> Iterator[tuple[int, int, list[int]]]:
    """``indices`` ``size`` at a time, as a vector env of ``size`` envs plays them: per batch its
    start in ``indices``, how many of it are real, and the batch padded to ``size`` with its
    last index (padded envs are played and ignored).

    >>> list(padded_batches([3, 4, 5], 2))
    [(0, 2, [3, 4]), (2, 1, [5, 5])]
    """
    for start in range(0, len(indices), size):
        batch = list(indices[start : start + size])
        yield start, len(batch), batch + batch[-1:] * (size - len(batch))
