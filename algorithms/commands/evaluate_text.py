"""``deliberate evaluate text``: a saved text run's latest checkpoint, played on held-out problems.

A run of ``deliberate train text`` records its settings in its folder's ``config.json`` and
its weights in ``checkpoint.safetensors``. This command rebuilds the learner from them as
``--config RUN/config.json --resume`` does (the same config, model, env and learner, and
the run's own dtype), loads the checkpoint's weights, and plays the first ``--eval-problems``
problems of the split greedily and scored strictly, as the run's own held-out evaluations
play them (:func:`algorithms.text.train.held_out_problems`, :func:`algorithms.text.evaluate`):
on the same problems, the numbers the run logged at that update. It prints a table and writes
``RUN/evaluations/<split>-<N>problems-update<K>.json``; the run's own files are read only
(what both families share: :mod:`algorithms.commands.evaluate`).

Text runs only: ``deliberate evaluate meta`` evaluates a meta run
(:mod:`algorithms.commands.evaluate_meta`). Under ``torchrun`` the processes share the
problems, as a run's held-out evaluation shares them, and rank 0 alone writes and prints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.devices import Dtype
from algorithms.commands.common import quiet_libraries
from algorithms.commands.evaluate import (
    EvaluateRun,
    evaluation_record,
    newest_checkpoint,
    run_record,
    write_evaluation,
)
from algorithms.core.run_dirs import CONFIG
from algorithms.text.config import BASE_DIGEST, MACHINE_RECORDS, TEXT_CONFIGS
from deliberation_env.text.config import is_import_path

if TYPE_CHECKING:
    from algorithms.text.base import TextPolicyGradientLearner
    from algorithms.text.config import TextLearnerConfig

NOT_SETTINGS = ("algo", "run_dir", "resume", "resume_from", "progress")
"""What a text run's ``config.json`` records beside the learner's settings (the learner's
name, the folder, the last command's flags), left out of the config rebuilt from it (and the
machine's records, :data:`~algorithms.text.config.MACHINE_RECORDS`)."""


@dataclass
class EvaluateText(EvaluateRun):
    """Evaluate a text run's latest checkpoint on held-out problems: ``deliberate evaluate text
    --run-dir RUN [--eval-problems N]``. The learner is rebuilt from ``RUN/config.json`` as
    ``--resume`` rebuilds it, its weights are the checkpoint's, and the problems are played
    greedily and scored strictly, as the run's own held-out evaluations; a table, and
    ``RUN/evaluations/<split>-<N>problems-update<K>.json`` (the run's own files are left as
    they are). Text runs only (``evaluate meta`` evaluates a meta run)."""

    eval_envs: int | None = None
    """Problems played at a time (the run's ``--eval-envs``: the same numbers, but for
    floating-point noise); None: the run's own."""
    device: str | None = None
    """Where the models run, as ``train text --device`` takes it (``auto``, ``cpu``,
    ``cuda``, ``cuda:N``); None: the run's own."""
    dtype: Dtype = "auto"
    """The weights' dtype, as ``train text --dtype`` takes it: ``auto``, the run's own, or
    that one by name (the checkpoint's weights load in the dtype they trained in)."""
    protocol: str | None = None
    """The run's protocol by import path (``./my_task.py:protocol``), where it trained with
    one of your own: its ``config.json`` names it, but reading a file imports no code."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eval_envs is not None and self.eval_envs < 1:
            raise ValueError(f"--eval-envs must be >= 1, got {self.eval_envs}")


def evaluate_text(cfg: EvaluateText) -> dict[str, float]:
    """``deliberate evaluate text``: rebuild the run's learner, load its newest checkpoint,
    play ``cfg``'s problems, print the table and write the evaluation's JSON file (the
    module docstring); return the evaluation's ``eval/*`` metrics.

    Raises:
        ValueError: Before any model loads: on a folder that holds no text run, or no
            checkpoint, or a run this command cannot rebuild (a learner of one's own, a
            protocol given as an instance); then on a checkpoint that does not fit the
            rebuilt learner (another base model, another dtype).
    """
    from agents.devices import full_determinism
    from algorithms.core import data_parallel
    from algorithms.text.eval import evaluate
    from algorithms.text.train import held_out_problems

    started = time.perf_counter()
    folder = Path(cfg.run_dir)
    record = run_record(folder, "text")
    checkpoint = newest_checkpoint(folder)  # refuses a pickled checkpoint.pt of release 0.1
    quiet_libraries(cfg.progress)
    config, placement = placed(recorded_config(folder, record, cfg), folder)
    deterministic = full_determinism() if config.full_determinism else contextlib.nullcontext()  # as the run played
    with deterministic, data_parallel.process_group(config.device) as ranks:  # under torchrun: the ranks share the problems
        if ranks.world_size > config.groups_per_update:  # the learner is built as the run's, which shares its groups
            raise ValueError(
                f"the run in {folder} trained {config.groups_per_update} group(s) per update, and its learner shares them "
                f"among the processes: evaluate it on at most {config.groups_per_update} (torchrun --nproc-per-node), "
                f"not {ranks.world_size}"
            )
        learner = saved_learner(config, folder, record, checkpoint)
        venv, count = held_out_problems(config, cfg.eval_problems, cfg.split)
        evaluation = evaluate(learner, venv, list(range(count)), progress=cfg.progress)
    if not ranks.writes:  # every rank has the whole evaluation; rank 0 writes and prints it
        return evaluation.metrics
    settings = {"eval_envs": learner.config.eval_envs, **placement, "processes": ranks.world_size}
    elapsed = time.perf_counter() - started
    result = evaluation_record(cfg, evaluation, learner.name, learner.update, checkpoint, count, settings, elapsed)
    write_evaluation(folder, result, started)
    return evaluation.metrics


def recorded_config(folder: Path, record: dict[str, Any], cfg: EvaluateText) -> TextLearnerConfig:
    """The learner config the run in ``folder`` recorded (``record``, its ``config.json``),
    read as ``--config RUN/config.json`` reads it, with ``cfg``'s device, dtype, eval envs,
    protocol and progress where it gives them.

    Raises:
        ValueError: On a run of a learner of one's own, a task or protocol given as an
            instance, or one by import path without ``--protocol``; on a record that does not
            read back (:func:`algorithms.core.config_files.build`).
    """
    from algorithms.core import config_files

    algo = record.get("algo")
    if algo not in TEXT_CONFIGS:
        raise ValueError(
            f"the run in {folder} trained {algo!r}, a learner of your own: evaluate text rebuilds the shipped learners "
            f"({', '.join(TEXT_CONFIGS)}); evaluate yours from Python with algorithms.text.evaluate"
        )
    for name in ("task", "protocol"):
        if str(record.get(name, "")).startswith("<"):
            raise ValueError(
                f"the run in {folder} trained with the {name} {record[name]}, an instance built in Python, which its {CONFIG} "
                "names but cannot rebuild: evaluate it from Python with algorithms.text.evaluate"
            )
    data = {key: value for key, value in record.items() if key not in NOT_SETTINGS}
    protocol = data.get("protocol")
    if is_import_path(protocol):
        if cfg.protocol is None:
            raise ValueError(f"the run in {folder} trained with the protocol {protocol}, a file of your own: give it again, --protocol {protocol} (reading {CONFIG} imports no code)")
        del data["protocol"]
    kind = TEXT_CONFIGS[algo]
    config = config_files.build(kind, config_files.nested(kind, data, left_out=MACHINE_RECORDS), str(folder / CONFIG))
    env = config.env if cfg.protocol is None else dataclasses.replace(config.env, protocol=cfg.protocol)
    given = {name: value for name in ("device", "eval_envs") if (value := getattr(cfg, name)) is not None}
    run = dataclasses.replace(config.run, run_dir=str(folder), progress=cfg.progress)
    return dataclasses.replace(config, env=env, run=run, dtype=cfg.dtype, **given)


def placed(config: TextLearnerConfig, folder: Path) -> tuple[TextLearnerConfig, dict[str, str]]:
    """``config`` with the dtype of the run in ``folder`` (``auto``: the one it trained in),
    and the device and dtype that gives here, as a resumed run takes them.

    Raises:
        ValueError: On a device this machine lacks, another dtype than the run's, or full
            fine-tuning in float16.
    """
    from algorithms.text.train import check_full_in_float16, kept_dtype, resolved_placement

    config = kept_dtype(config, folder, resolved_placement(config.device, config.dtype)["resolved_dtype"])
    placement = resolved_placement(config.device, config.dtype)
    check_full_in_float16(config, placement)
    return config, placement


def saved_learner(config: TextLearnerConfig, folder: Path, record: dict[str, Any], checkpoint: Path) -> TextPolicyGradientLearner:
    """The learner of ``config`` with the weights of ``checkpoint``, built as a resumed run
    builds it: its training env, its model (``config.json``'s, where the base lies now,
    checked against the base it trained on) and the names of the base the checkpoint records.

    Raises:
        ValueError: On a model whose weights are not the base the run trained on, or a
            checkpoint that does not fit the learner (another setting or dtype).
    """
    from agents.trainable_lm.weights import base_digest
    from algorithms.core import data_parallel
    from algorithms.text.base import rank_num_envs
    from algorithms.text.train import (
        DIGEST_ELEMENTS,
        base_named,
        build_env,
        build_lm,
        learner_class,
        trained_names,
    )

    venv = build_env(config, rank_num_envs(config, data_parallel.current()))
    lm = build_lm(config, list(venv.possible_agents))
    digest = base_digest(lm, elements=DIGEST_ELEMENTS)
    if record.get(BASE_DIGEST, digest) != digest:
        raise ValueError(
            f"cannot evaluate the run in {folder}: {base_named(dataclasses.asdict(config))}, the base its {CONFIG} names, "
            "has other weights here than the base it trained on (it moved or changed)"
        )
    if BASE_DIGEST in record:  # the checkpoint names the base as the run first did, wherever it lies now
        names = trained_names(folder, record, config)
        config = dataclasses.replace(config, model=names["model"], models=tuple(names["models"]))
    learner = learner_class(config)(config, lm, venv, {})
    learner.load(checkpoint)
    return learner
