"""``deliberate evaluate meta``: a saved meta run's latest checkpoint, played on held-out problems.

A run of ``deliberate train meta`` records its settings in its folder's ``config.json`` and
its weights in ``checkpoint.safetensors``. This command rebuilds the learner's config from
the record as ``--config RUN/config.json --resume`` reads it
(:func:`~algorithms.commands.records.settings_of_run`, :func:`algorithms.core.config_files.build`),
builds the greedy policy of the checkpoint's network (:func:`algorithms.meta.train.checkpoint_network`,
what ``learner.policy()`` plays), and plays the first ``--eval-problems`` problems of the
split once each, greedily and scored strictly, with the run's own held-out env and episode
seed (:func:`algorithms.meta.train.held_out_problems`, :func:`algorithms.meta.evaluate.evaluate`):
on the run's problems, the ``eval/*`` numbers it logged at that update. It prints a table and
writes ``RUN/evaluations/<split>-<N>problems-update<K>.json``; the run's own files are read
only (what both families share: :mod:`algorithms.commands.evaluate`).

A policy-gradient run's SFT warm start (``RUN/sft``, which keeps no ``config.json`` of its
own) is evaluated with the settings its run gave it. A learner of one's own, or a task or
team built in Python, is evaluated from Python (:func:`algorithms.meta.evaluate.evaluate`).
The baselines train nothing and keep no run of their own (``deliberate run meta`` and
``compare meta`` evaluate them).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from algorithms.commands.evaluate import (
    EvaluateRun,
    evaluation_record,
    newest_checkpoint,
    run_record,
    write_evaluation,
)
from algorithms.commands.records import family_of, settings_of_run
from algorithms.core.run_dirs import CONFIG, recorded_settings
from algorithms.meta.config import CONFIGS, PolicyGradientConfig

if TYPE_CHECKING:
    from algorithms.meta.config import LearnerConfig
    from algorithms.meta.network import NetworkPolicy

WARM_START = "sft"
"""The folder of a policy-gradient run's SFT warm start inside the run's (``RUN/sft``)."""
BUILT_IN_PYTHON = ("task", "team")
"""The env's settings that Python may give as instances, which a ``config.json`` names
(``<... object at 0x...>``) but cannot rebuild."""


@dataclass
class EvaluateMeta(EvaluateRun):
    """Evaluate a meta run's latest checkpoint on held-out problems: ``deliberate evaluate meta
    --run-dir RUN [--eval-problems N]``. The learner's config is rebuilt from
    ``RUN/config.json`` as ``--resume`` rebuilds it, the policy is the checkpoint's network
    played greedily, and the problems are played and scored strictly with the run's own
    held-out env and episode seed, as its held-out evaluations; a table, and
    ``RUN/evaluations/<split>-<N>problems-update<K>.json`` (the run's own files are left as
    they are). Meta runs only (``evaluate text`` evaluates a text run); ``RUN/sft``, a run's
    SFT warm start, too."""

    env_workers: int | None = None
    """Ray workers that run the env's episodes, as ``train meta --env-workers`` takes them (0:
    in this process); None: the run's own."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.env_workers is not None and self.env_workers < 0:
            raise ValueError(f"--env-workers must be >= 0 (0: in this process), got {self.env_workers}")


def evaluate_meta(cfg: EvaluateMeta) -> dict[str, float]:
    """``deliberate evaluate meta``: rebuild the run's config, load its newest checkpoint's
    network, play ``cfg``'s problems, print the table and write the evaluation's JSON file
    (the module docstring); return the evaluation's ``eval/*`` metrics.

    Raises:
        ValueError: Before any env or LLM is built: on a folder that holds no meta run, or
            no checkpoint, or a run this command cannot rebuild (a learner of one's own, a
            task or team built in Python), or a checkpoint of another learner than its run's.
    """
    from algorithms.meta.evaluate import evaluate
    from algorithms.meta.train import held_out_problems

    started = time.perf_counter()
    folder = Path(cfg.run_dir)
    algo, config = saved_config(folder, cfg)
    checkpoint = newest_checkpoint(folder)  # refuses a pickled checkpoint.pt of release 0.1
    state = checkpoint_state(checkpoint, algo)
    venv, count = held_out_problems(config, cfg.eval_problems, cfg.split)
    policy = saved_policy(state, checkpoint, algo, venv)
    evaluation = evaluate(policy, venv, range(count), seed=config.eval_seed, progress=cfg.progress)
    settings = {"eval_envs": venv.num_envs, "eval_seed": config.eval_seed, "env_workers": config.env.workers}
    elapsed = time.perf_counter() - started
    write_evaluation(folder, evaluation_record(cfg, evaluation, algo, state["update"], checkpoint, count, settings, elapsed), started)
    return evaluation.metrics


def saved_config(folder: Path, cfg: EvaluateMeta) -> tuple[str, LearnerConfig]:
    """The learner's name and config of the meta run in ``folder``, read from its
    ``config.json`` (:func:`recorded_config`); for ``RUN/sft``, a run's SFT warm start, its
    run's :meth:`~algorithms.meta.config.PolicyGradientConfig.warm_start_config`.

    Raises:
        ValueError: As :func:`~algorithms.commands.evaluate.run_record` and
            :func:`recorded_config`.
    """
    parent = folder.parent
    if folder.name == WARM_START and folder.is_dir() and not (folder / CONFIG).exists() and family_of(recorded_settings(parent)) == "meta":
        config = recorded_config(parent, run_record(parent, "meta"), cfg)
        if isinstance(config, PolicyGradientConfig):
            return WARM_START, config.warm_start_config(str(folder))
    record = run_record(folder, "meta")
    return record.get("algo"), recorded_config(folder, record, cfg)


def recorded_config(folder: Path, record: dict[str, Any], cfg: EvaluateMeta) -> LearnerConfig:
    """The learner config the run in ``folder`` recorded (``record``, its ``config.json``),
    read as ``--config RUN/config.json --resume`` reads it, without its warm start's path
    (the checkpoint holds what it gave), with ``cfg``'s env workers and progress.

    Raises:
        ValueError: On a run of a learner of one's own, or of a task or team built in
            Python; on a record that does not read back (:func:`algorithms.core.config_files.build`).
    """
    from algorithms.core import config_files

    algo = record.get("algo")
    if algo not in CONFIGS:
        raise ValueError(
            f"the run in {folder} trained {algo!r}, a learner of your own: evaluate meta rebuilds the shipped learners "
            f"({', '.join(CONFIGS)}); evaluate yours from Python with algorithms.meta.evaluate.evaluate"
        )
    env = record.get("env") if isinstance(record.get("env"), dict) else {}
    for name in BUILT_IN_PYTHON:
        values = env.get(name) if isinstance(env.get(name), list) else [env.get(name)]
        built = next((value for value in values if str(value).startswith("<")), None)
        if built is not None:
            raise ValueError(
                f"the run in {folder} trained with the {name} {built}, an instance built in Python, which its {CONFIG} "
                "names but cannot rebuild: evaluate it from Python with algorithms.meta.evaluate.evaluate"
            )
    data = settings_of_run(folder / CONFIG, {key: value for key, value in record.items() if key != "algo"}, "meta", [])
    if "warm_start" in data:
        data["warm_start"] = ""
    config = config_files.build(CONFIGS[algo], data, str(folder / CONFIG))
    env_config = config.env if cfg.env_workers is None else dataclasses.replace(config.env, workers=cfg.env_workers)
    return dataclasses.replace(config, env=env_config, run=dataclasses.replace(config.run, progress=cfg.progress))


def checkpoint_state(checkpoint: Path, algo: str) -> dict[str, Any]:
    """The state of ``checkpoint``, a checkpoint of the learner ``algo`` with its update and
    a network whose size fits its weights (tensors and JSON: loading it runs no code).

    Raises:
        ValueError: On a checkpoint of another learner.
        CheckpointError: On a file that is no learner checkpoint, or holds no update or network.
    """
    from algorithms.core.checkpoints import check_structure, load_checkpoint
    from algorithms.meta.train import network_size

    state = load_checkpoint(checkpoint)
    if state.get("algo") != algo:
        raise ValueError(f"{checkpoint} is a checkpoint of {state.get('algo')!r}, not of {algo}, the learner its run recorded")
    check_structure(state.get("update"), int, f"{checkpoint}: update")
    network_size(state, checkpoint)  # before the env (and its team) is built
    return state


def saved_policy(state: dict[str, Any], checkpoint: Path, algo: str, venv: Any) -> NetworkPolicy:
    """The greedy policy of the network in ``state`` (``checkpoint``'s) on ``venv``'s agents,
    named ``algo``: what the learner's ``policy()`` plays in its run's held-out evaluations,
    on one thread as the run played it.

    Raises:
        CheckpointError: On a network that does not fit ``venv``'s observations.
    """
    import torch

    from algorithms.meta.network import NetworkPolicy
    from algorithms.meta.train import checkpoint_network

    torch.set_num_threads(1)  # as train: tiny networks, and the same sums as the run's
    network = checkpoint_network(state, venv.observation_space(venv.agents[0]), checkpoint)
    return NetworkPolicy(network, list(venv.agents), name=algo)
