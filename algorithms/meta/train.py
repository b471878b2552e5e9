"""Training runs: one learner, its evaluations, logs and checkpoints (``deliberate train``).

``train(TrainConfig(...))`` trains one learner (optionally after an SFT warm start),
evaluates it greedily on held-out problems every ``eval_every`` updates, logs JSONL
metrics (:mod:`algorithms.core.metrics`) and checkpoints, and resumes from its run directory.
:func:`load_network` reads any learner's checkpoint back.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from algorithms.core.checkpoints import CheckpointError, check_structure, load_checkpoint
from algorithms.core.run import RunConfig, run
from algorithms.core.run_dirs import new_run_dir, open_run_dir
from algorithms.meta import baselines
from algorithms.meta.base import Learner
from algorithms.meta.config import RESUMABLE, Algo, TrainConfig
from algorithms.meta.evaluate import evaluate
from algorithms.meta.grpo import GRPO
from algorithms.meta.magrpo import MAGRPO
from algorithms.meta.network import MetaPolicyNetwork
from algorithms.meta.policy import Policy
from algorithms.meta.sft import SFT
from algorithms.meta.softrankpo import SoftRankPO
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig

LEARNERS: dict[Algo, type[Learner]] = {
    "softrankpo": SoftRankPO,
    "grpo": GRPO,
    "magrpo": MAGRPO,
    "sft": SFT,
}
"""Learner classes by algorithm name (as the CLI and the harness spell them)."""
EVAL_BATCH = 256
"""Most test envs stepped together during an evaluation."""


def held_out(policy: Policy, venv: Any, cfg: TrainConfig) -> dict[str, float]:
    """Greedy held-out metrics (``eval/...``) of ``policy`` on the run's fixed test problems.

    Args:
        policy: The policy to evaluate.
        venv: A test-split vector env (``vector_env_from(cfg.env, n, split="test")``).
        cfg: The run's config (how many problems, which episode seed).
    """
    result = evaluate(policy, venv, range(cfg.eval_problems), seed=cfg.eval_seed, progress=False)
    return {
        "eval/accuracy": result.accuracy[-1],
        "eval/consensus_accuracy": result.consensus_accuracy[-1],
        "eval/tokens": result.tokens_per_problem,
        **{f"eval/{action}_share": share for action, share in result.action_shares.items()},
    }


def _run_learner(
    learner: Learner, cfg: TrainConfig, updates: int, run_dir: Path, label: str
) -> dict[str, float]:
    """Train ``learner`` up to ``updates`` updates in ``run_dir`` (:func:`algorithms.core.run.run`:
    resumed, checkpointed every update, evaluated first, every ``eval_every`` updates and
    last); return its last held-out metrics."""
    test_venv = vector_env_from(cfg.env, min(cfg.eval_problems, EVAL_BATCH), split="test")
    config = RunConfig(
        updates,
        str(run_dir),
        resume=cfg.resume,
        checkpoint_every=1,
        eval_every=cfg.eval_every,
        evaluate_first=True,
        progress=cfg.progress,
        label=label,
        tensorboard=cfg.tensorboard,
        wandb_project=cfg.wandb_project,
    )
    result = run(
        learner,
        config,
        lambda: held_out(learner.policy(), test_venv, cfg),
        dataclasses.asdict(cfg),
        learner.headline,
    )
    return result.evaluation


def train(cfg: TrainConfig, learner: Callable[..., Learner] | None = None) -> dict[str, float]:
    """Train ``cfg.algo`` (after an SFT warm start if configured); return its final held-out
    metrics. With ``learner``, a learner of one's own, train it instead, built as the
    shipped learner classes are, ``learner(config, venv, warm_start=network)``, with the
    config of ``cfg.algo`` (a policy-gradient learner's); it has ``policy()``, the greedy
    policy the held-out evaluation plays (:mod:`algorithms.meta.compare`).

    Writes ``metrics.jsonl``, ``checkpoint.safetensors``, ``config.json`` and ``summary.json`` in
    ``cfg.run_dir`` (a new folder if it is ``""``; the warm start in ``run_dir/sft``);
    re-running with ``resume`` continues from the checkpoints.

    Raises:
        ValueError: Before anything is written, when ``run_dir`` holds a run and ``resume``
            is False, or holds a run of other settings (:func:`algorithms.core.run_dirs.open_run_dir`),
            or when ``learner`` is given with ``algo="sft"``.
    """
    if learner is not None and cfg.algo == "sft":
        raise ValueError("a learner of one's own takes a policy-gradient learner's config: algo softrankpo, grpo or magrpo")
    cfg = cfg.with_task_defaults()
    if not cfg.run_dir:
        cfg = dataclasses.replace(cfg, run_dir=str(new_run_dir("train", "meta", f"{cfg.algo}-seed{cfg.seed}")))
    torch.set_num_threads(1)  # tiny networks: threads cost more than they give
    sft = None  # the run's SFT learner or its warm start's, built (its env, the task's data) before the folder is written
    if cfg.algo == "sft" or (cfg.sft_updates and not cfg.warm_start):
        sft_config = cfg.learner_config("sft")
        sft = SFT(sft_config, vector_env_from(cfg.env, sft_config.num_envs), baselines.Oracle())
    warm = load_network(cfg.warm_start, cfg.env) if cfg.warm_start and cfg.algo != "sft" else None
    run_dir = open_run_dir(cfg.run_dir, dataclasses.asdict(cfg), cfg.resume, RESUMABLE)
    if cfg.algo == "sft":
        final = _run_learner(sft, cfg, cfg.updates, run_dir, f"sft seed {cfg.seed}")
    else:
        if sft is not None:
            _run_learner(
                sft,
                dataclasses.replace(cfg, eval_every=cfg.sft_updates),
                cfg.sft_updates,
                run_dir / "sft",
                f"sft seed {cfg.seed}",
            )
            warm = sft.network
        config = cfg.learner_config(cfg.algo)
        build = LEARNERS[cfg.algo] if learner is None else learner
        trained: Learner = build(config, vector_env_from(cfg.env, config.num_envs), warm_start=warm)
        final = _run_learner(trained, cfg, cfg.updates, run_dir, f"{trained.name} seed {cfg.seed}")
    (run_dir / "summary.json").write_text(json.dumps(final, indent=2))
    return final


def load_network(path: str | Path, env: EnvConfig) -> MetaPolicyNetwork:
    """The network of a learner checkpoint (any algorithm), for warm starts and evaluation.

    Raises:
        CheckpointError: When ``path`` is not a checkpoint (a pickle is refused unread) or
            holds no meta-policy network for ``env``'s observations.
    """
    state = load_checkpoint(path)
    check_structure(state.get("config"), dict, f"{path}: config")
    check_structure(state.get("network"), dict, f"{path}: network")
    hidden_size, num_heads = state["config"].get("hidden_size"), state["config"].get("num_heads")
    bias = state["network"].get("query.bias")
    # Sized by the weights in the file (never by a bare number in it) before anything is built.
    if not (type(hidden_size) is int and type(num_heads) is int and isinstance(bias, torch.Tensor)
            and bias.shape == (hidden_size,) and 0 < num_heads <= hidden_size and hidden_size % num_heads == 0):
        raise CheckpointError(f"{path} holds no meta-policy network: its hidden_size and num_heads do not fit its weights")
    space = vector_env_from(env, 1).observation_space("agent_0")
    network = MetaPolicyNetwork(space["self"].shape[-1], space["peers"].shape[-1], hidden_size, num_heads)
    check_structure(state["network"], network.state_dict(), f"{path}: network")
    network.load_state_dict(state["network"])
    return network
