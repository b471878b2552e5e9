"""Training runs of the meta family: one learner, its evaluations, logs and checkpoints
(``deliberate train meta ALGO``).

``train(GRPOConfig(...))`` trains the learner of the config's class (a policy-gradient one
after its SFT warm start, if configured) by the run rules of both families
(:func:`algorithms.core.run.run` with ``config.run``), and owns its run folder: it names a
new one for ``run_dir=""``, checks ``resume`` and the settings, builds the envs and the
learner, and only then records ``config.json``; then ``metrics.jsonl``,
``checkpoint.safetensors`` and ``summary.json`` (``run_dir/sft`` holds the warm start's run).
:func:`load_network` reads any learner's checkpoint back; :func:`held_out_problems` is the
held-out env of a run's evaluations and of ``deliberate evaluate meta``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from agents.fingerprint import file_sha256
from algorithms.core.checkpoints import CheckpointError, check_structure, load_checkpoint
from algorithms.core.compare import check_own_name
from algorithms.core.config import run_settings
from algorithms.core.metrics import check_loggers
from algorithms.core.run import RunResult, TrainResult, run
from algorithms.core.run_dirs import check_resume, named_run, open_run_dir, recorded_settings
from algorithms.meta import baselines
from algorithms.meta.base import MetaLearner
from algorithms.meta.config import (
    CONFIGS,
    RECORDED_BY,
    WARM_START_DIGEST,
    Algo,
    LearnerConfig,
    PolicyGradientConfig,
    algo_of,
    with_held_out_problems,
    with_task_defaults,
)
from algorithms.meta.evaluate import evaluate
from algorithms.meta.grpo import GRPO
from algorithms.meta.magrpo import MAGRPO
from algorithms.meta.network import MetaPolicyNetwork
from algorithms.meta.policy import Policy
from algorithms.meta.sft import SFT
from algorithms.meta.softrankpo import SoftRankPO
from deliberation_env import __version__
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig
from deliberation_env.tasks import problem_count

LEARNERS: dict[Algo, type[MetaLearner]] = {
    "softrankpo": SoftRankPO,
    "grpo": GRPO,
    "magrpo": MAGRPO,
    "sft": SFT,
}
"""Learner classes by algorithm name (as the CLI and the harness spell them)."""
EVAL_BATCH = 256
"""Most test envs stepped together during an evaluation."""
SUMMARY = "summary.json"
"""A run's held-out evaluations before and after training (both families write it)."""


def held_out_env(config: LearnerConfig, num_envs: int, split: str = "test") -> Any:
    """The vector env of the held-out evaluation, ``num_envs`` envs stepped together:
    ``config.env`` on the test split (or ``split``: ``deliberate evaluate meta --split
    train``), scored strictly whatever the training scoring (held-out scores are strict: a
    run trained with ``scoring="lenient"`` reported lenient held-out accuracy)."""
    return vector_env_from(config.env, num_envs, split=split, scoring="strict")


def held_out_problems(config: LearnerConfig, asked: int | None, split: str = "test") -> tuple[Any, int]:
    """The held-out env of ``config`` on ``split`` (:func:`held_out_env`) and how many of its
    problems to play: ``asked``, at most the split's (more is said, with a warning), or the
    whole split (None); what a run's held-out evaluations play (``asked``: its
    ``run.eval_problems``) and ``deliberate evaluate meta``. At most :data:`EVAL_BATCH`
    envs step together, or as many as the problems where they are fewer."""
    venv = held_out_env(config, min(asked or EVAL_BATCH, EVAL_BATCH), split)
    count = len(venv.problems) if asked is None else problem_count(asked, len(venv.problems), split, "--eval-problems")
    if count < venv.num_envs:
        venv = held_out_env(config, count, split)
    return venv, count


def held_out(policy: Policy, venv: Any, config: LearnerConfig) -> dict[str, float]:
    """Greedy held-out metrics (``eval/...``) of ``policy`` on the run's fixed test problems.

    Args:
        policy: The policy to evaluate.
        venv: The held-out vector env (:func:`held_out_problems`).
        config: The run's learner config (how many problems, which episode seed).
    """
    return evaluate(policy, venv, range(config.run.eval_problems), seed=config.eval_seed, progress=False).metrics


def _run_learner(learner: MetaLearner, config: LearnerConfig, label: str) -> RunResult:
    """Train ``learner`` by ``config.run`` (:func:`algorithms.core.run.run`), evaluated on
    the held-out problems when ``run.eval_problems`` is given."""
    evaluation = None
    if config.run.eval_problems:
        test_venv, _ = held_out_problems(config, config.run.eval_problems)
        evaluation = lambda: held_out(learner.policy(), test_venv, config)
    return run(learner, config.run, evaluation, dataclasses.asdict(config), learner.headline, label=label)


def provisional_name(config: LearnerConfig) -> str:
    """The name of a run of a learner of one's own without a ``name`` until the learner is
    built (its folder's): the shipped learner whose config ``config`` is or derives from,
    else ``learner``."""
    return next((name for name, kind in CONFIGS.items() if isinstance(config, kind)), "learner")


def train(config: LearnerConfig, learner: Callable[..., MetaLearner] | None = None) -> TrainResult:
    """Train the learner of ``config``'s class (:data:`LEARNERS`; a policy-gradient one after
    its SFT warm start, if configured); return the trained learner, its metrics and its
    held-out evaluations before and after (:class:`~algorithms.core.run.TrainResult`, as
    :func:`algorithms.text.train` returns). With ``learner``,
    a learner of one's own, train it instead, built as the shipped learner classes are,
    ``learner(config, venv, warm_start=network)`` with ``config`` (a
    :class:`~algorithms.meta.config.PolicyGradientConfig`); it has ``policy()``, the greedy
    policy the held-out evaluation plays (:mod:`algorithms.meta.compare`).

    Writes ``config.json``, ``metrics.jsonl``, ``checkpoint.safetensors`` and ``summary.json``
    (:data:`SUMMARY`: ``algo``, ``before`` and ``after``, the held-out evaluations) in
    ``config.run.run_dir`` (a new folder if it is ``""``, none if None; the warm start in
    ``run_dir/sft``); with ``run.resume`` it continues from the checkpoints.

    Raises:
        ValueError: Before anything is written, when ``run_dir`` holds a run and ``resume``
            is False, or holds a run of other settings (:func:`algorithms.core.run_dirs.open_run_dir`),
            or when ``learner`` is given with an SFT config, or, while a folder records the
            run, keeps a shipped learner's ``name`` (:func:`~algorithms.core.compare.check_own_name`:
            give it ``name = "mine"``) or has none and is built after an SFT warm start.
    """
    # one's own: its name (a config of its own, derived from a shipped one, names no shipped learner)
    # (a factory without one: its config's learner's name, until the learner it builds names the run)
    algo = algo_of(config) if learner is None else (getattr(learner, "name", None) or provisional_name(config))
    if learner is not None and not isinstance(config, PolicyGradientConfig):
        raise ValueError("a learner of one's own takes a policy-gradient learner's config: softrankpo, grpo or magrpo")
    if learner is not None and config.run.run_dir is not None:  # its runs are recorded by its name
        check_own_name(getattr(learner, "__qualname__", repr(learner)), learner, "meta", "train")
        if not isinstance(getattr(learner, "name", None), str) and config.sft_updates and not config.warm_start:
            raise ValueError(
                f"learner {getattr(learner, '__qualname__', repr(learner))} has no name, and it is built after its "
                "SFT warm start, once its run is recorded: give it one (name = 'mine'), by which its runs are recorded"
            )
    config = with_held_out_problems(with_task_defaults(config))
    check_loggers(config.run.tensorboard, config.run.wandb_project)
    check_resume(config.run.resume, config.run.run_dir)
    config = dataclasses.replace(config, run=named_run(config.run, "meta", f"{algo}-seed{config.seed}"))
    torch.set_num_threads(1)  # tiny networks: threads cost more than they give
    # Everything is built (the envs, the task's data, the warm start read) before the folder is written.
    sft = None
    warm = None
    if isinstance(config, PolicyGradientConfig) and config.warm_start:
        warm = load_network(config.warm_start, config.env)
    elif isinstance(config, PolicyGradientConfig) and config.sft_updates:
        sft_dir = None if config.run.run_dir is None else str(Path(config.run.run_dir) / "sft")
        sft_config = config.warm_start_config(sft_dir)
        sft = SFT(sft_config, vector_env_from(config.env, sft_config.num_envs), baselines.Oracle())
    build = LEARNERS[algo] if learner is None else learner
    if isinstance(config, PolicyGradientConfig):
        venv = vector_env_from(config.env, config.num_envs)
        trained = build(config, venv, warm_start=warm) if sft is None else None
        if trained is not None and learner is not None and not isinstance(getattr(learner, "name", None), str):
            algo = trained.name  # a factory without a name: the learner it built names the run
            if config.run.run_dir is not None:
                check_own_name(getattr(learner, "__qualname__", repr(learner)), trained, "meta", "train")
    else:
        trained = SFT(config, vector_env_from(config.env, config.num_envs), baselines.Oracle())
    folder = None
    if config.run.run_dir is not None:
        record = {"algo": algo, **dataclasses.asdict(config), RECORDED_BY: f"deliberation-env {__version__}"}
        may_change = (*run_settings(), RECORDED_BY)
        if warm is not None:
            record[WARM_START_DIGEST] = file_sha256(config.warm_start)
            recorded = recorded_settings(config.run.run_dir) if config.run.resume else {}
            if WARM_START_DIGEST in recorded:
                may_change += ("warm_start",)  # a moved checkpoint: the same one, by its digest
            elif recorded:
                may_change += (WARM_START_DIGEST,)  # a run of 0.2.0 records none: its path is compared, as then
        folder = open_run_dir(config.run.run_dir, record, config.run.resume, may_change, updates=config.run.updates,
                              resume_from=config.run.resume_from)  # fmt: skip
    if sft is not None:
        _run_learner(sft, sft.config, f"sft seed {config.seed}")
        trained = build(config, venv, warm_start=sft.network)
    result = _run_learner(trained, config, f"{trained.name} seed {config.seed}")
    if folder is not None:
        summary = {"algo": trained.name, "before": result.first, "after": result.evaluation}
        (folder / SUMMARY).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return TrainResult(trained, result.history, result.first, result.evaluation, config.run.run_dir)


def load_network(path: str | Path, env: EnvConfig) -> MetaPolicyNetwork:
    """The network of a learner checkpoint (any algorithm), for warm starts and evaluation.

    Raises:
        CheckpointError: When ``path`` is not a checkpoint (a pickle is refused unread) or
            holds no meta-policy network for ``env``'s observations.
    """
    state = load_checkpoint(path)
    network_size(state, path)  # before the env is built
    return checkpoint_network(state, vector_env_from(env, 1).observation_space("agent_0"), path)


def checkpoint_network(state: dict[str, Any], space: Any, path: str | Path) -> MetaPolicyNetwork:
    """The network of ``state``, a learner checkpoint's (any algorithm) read from ``path``,
    sized by its weights, for the observations of ``space`` (an agent's observation space
    in the env it is to play: :func:`load_network`, ``deliberate evaluate meta``).

    Raises:
        CheckpointError: When ``state`` holds no meta-policy network for those observations.
    """
    hidden_size, num_heads = network_size(state, path)
    network = MetaPolicyNetwork(space["self"].shape[-1], space["peers"].shape[-1], hidden_size, num_heads)
    check_structure(state["network"], network.state_dict(), f"{path}: network")
    network.load_state_dict(state["network"])
    return network


def network_size(state: dict[str, Any], path: str | Path) -> tuple[int, int]:
    """The ``hidden_size`` and ``num_heads`` of the network in ``state`` (read from ``path``),
    checked against its weights (never a bare number in the file) before anything is built.

    Raises:
        CheckpointError: When they do not fit its weights, or ``state`` holds no network.
    """
    check_structure(state.get("config"), dict, f"{path}: config")
    check_structure(state.get("network"), dict, f"{path}: network")
    hidden_size, num_heads = state["config"].get("hidden_size"), state["config"].get("num_heads")
    bias = state["network"].get("query.bias")
    if not (type(hidden_size) is int and type(num_heads) is int and isinstance(bias, torch.Tensor)
            and bias.shape == (hidden_size,) and 0 < num_heads <= hidden_size and hidden_size % num_heads == 0):
        raise CheckpointError(f"{path} holds no meta-policy network: its hidden_size and num_heads do not fit its weights")
    return hidden_size, num_heads
