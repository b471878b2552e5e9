"""Training runs: one learner, its evaluations, logs and checkpoints (``deliberate train``).

``train(TrainConfig(...))`` trains one learner (optionally after an SFT warm start),
evaluates it greedily on held-out problems every ``eval_every`` updates, logs JSONL
metrics (:mod:`algorithms.core.metrics`) and checkpoints, and resumes from its run directory.
:func:`load_network` reads any learner's checkpoint back.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
import tyro

from algorithms.core.checkpoints import (
    CHECKPOINT,
    CheckpointError,
    check_structure,
    load_checkpoint,
)
from algorithms.core.run import RunConfig, run
from algorithms.core.run_dirs import new_run_dir, open_run_dir
from algorithms.meta import baselines
from algorithms.meta.base import Learner
from algorithms.meta.evaluate import evaluate
from algorithms.meta.grpo import GRPO, GRPOConfig
from algorithms.meta.magrpo import MAGRPO, MAGRPOConfig
from algorithms.meta.network import MetaPolicyNetwork
from algorithms.meta.policy import Policy
from algorithms.meta.sft import SFT, SFTConfig
from algorithms.meta.softrankpo import SoftRankPO, SoftRankPOConfig
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig

Algo = Literal["softrankpo", "grpo", "magrpo", "sft"]
LEARNERS: dict[str, type[Learner]] = {
    "softrankpo": SoftRankPO,
    "grpo": GRPO,
    "magrpo": MAGRPO,
    "sft": SFT,
}
"""Learner classes by algorithm name (as the CLI and the harness spell them)."""
EVAL_BATCH = 256
"""Most test envs stepped together during an evaluation."""
RESUMABLE = ("updates", "eval_every", "run_dir", "resume", "progress", "tensorboard", "wandb_project")
"""The settings a resumed run may give other values than its first part had."""


def default_env() -> EnvConfig:
    """The env of the learning benchmarks: the simulated team on arithmetic at difficulty 3."""
    return EnvConfig(team="simulated", difficulty=3)


@dataclass
class TrainConfig:
    """One training run (``deliberate train``; ``--config FILE`` starts from a config file)."""

    algo: Algo = "softrankpo"
    """Learner to train."""
    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=default_env)
    """The training env (:class:`deliberation_env.meta.config.EnvConfig`, any task and team);
    evaluation uses the same env on the test split."""
    updates: int = 100
    """Updates of ``algo``; each plays ``num_envs`` training episodes."""
    sft_updates: int = 20
    """SFT warm-start updates before a policy-gradient learner (its initial policy and KL
    reference); 0 starts from a fresh network. Ignored for ``algo=sft`` or with ``warm_start``."""
    warm_start: str = ""
    """Path of an SFT checkpoint to start from instead of training one."""
    eval_every: int = 10
    """Evaluate on held-out problems every this many updates, and at the end."""
    eval_problems: int = 200
    """Held-out (test split) problems per evaluation: the first ``eval_problems``."""
    eval_seed: int = 0
    """Seed of the held-out episodes; keep it fixed across runs so that every run and
    baseline is evaluated on identical episodes (common random numbers)."""
    seed: int = 0
    """Seed of the run's training; overrides the learner configs' ``seed``."""
    problem_pool: int = 0
    """Train on the first this many training problems only (0: all); overrides the learner
    configs' ``problem_pool``."""
    seed_pool: int = 0
    """Episode seeds from ``{0, ..., seed_pool - 1}`` (0: fresh ones), so that an LLM team's
    rollouts repeat and the response cache serves them; overrides the learner configs'."""
    run_dir: str = ""
    """Folder of config.json, metrics.jsonl, checkpoints and summary.json; ``""``: a new one,
    ``runs/train/meta-<algo>-seed<seed>-<YYYYmmdd-HHMMSS>``. A folder that holds a run is
    refused without ``resume``."""
    resume: bool = False
    """Continue the run in ``run_dir`` from its checkpoints (refused, before anything is
    written, if it was started with other settings than those of :data:`RESUMABLE`)."""
    tensorboard: bool = False
    """Also log to TensorBoard (needs the ``tensorboard`` extra)."""
    wandb_project: str = ""
    """Also log to this Weights & Biases project, same metric names (needs the ``wandb``
    extra; ``WANDB_MODE=offline`` keeps it in ``run_dir/wandb``); ``""``: off."""
    progress: bool = True
    """Show a progress bar."""
    softrankpo: SoftRankPOConfig = field(default_factory=SoftRankPOConfig)
    """SoftRankPO settings (used when ``algo == "softrankpo"``)."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO settings."""
    magrpo: MAGRPOConfig = field(default_factory=MAGRPOConfig)
    """MAGRPO settings."""
    sft: SFTConfig = field(default_factory=SFTConfig)
    """SFT settings (the warm start, or ``algo == "sft"``)."""

    def __post_init__(self) -> None:
        if self.algo not in LEARNERS:
            raise ValueError(f"algo must be one of {sorted(LEARNERS)}, got {self.algo!r}")
        for name in ("updates", "eval_every", "eval_problems"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.sft_updates < 0:
            raise ValueError(f"sft_updates must be >= 0 (0: no warm start), got {self.sft_updates}")
        if self.warm_start and not Path(self.warm_start).is_file():
            raise ValueError(
                f"warm_start {self.warm_start!r} is not a file: give an SFT checkpoint "
                f"(e.g. <run_dir>/sft/{CHECKPOINT}) or leave it empty"
            )

    def learner_config(self, algo: str) -> Any:
        """The config of ``algo`` with the run's seed and pools."""
        return dataclasses.replace(
            getattr(self, algo),
            seed=self.seed,
            problem_pool=self.problem_pool,
            seed_pool=self.seed_pool,
        )


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


def train(cfg: TrainConfig) -> dict[str, float]:
    """Train ``cfg.algo`` (after an SFT warm start if configured); return its final held-out
    metrics.

    Writes ``metrics.jsonl``, ``checkpoint.safetensors``, ``config.json`` and ``summary.json`` in
    ``cfg.run_dir`` (a new folder if it is ``""``; the warm start in ``run_dir/sft``);
    re-running with ``resume`` continues from the checkpoints.

    Raises:
        ValueError: Before anything is written, when ``run_dir`` holds a run and ``resume``
            is False, or holds a run of other settings (:func:`algorithms.core.run_dirs.open_run_dir`).
    """
    if not cfg.run_dir:
        cfg = dataclasses.replace(cfg, run_dir=str(new_run_dir("train", "meta", f"{cfg.algo}-seed{cfg.seed}")))
    run_dir = open_run_dir(cfg.run_dir, dataclasses.asdict(cfg), cfg.resume, RESUMABLE)
    torch.set_num_threads(1)  # tiny networks: threads cost more than they give
    teacher = baselines.Oracle()
    if cfg.algo == "sft":
        config = cfg.learner_config("sft")
        learner: Learner = SFT(config, vector_env_from(cfg.env, config.num_envs), teacher)
        final = _run_learner(learner, cfg, cfg.updates, run_dir, f"sft seed {cfg.seed}")
    else:
        warm = None
        if cfg.warm_start:
            warm = load_network(cfg.warm_start, cfg.env)
        elif cfg.sft_updates:
            sft_config = cfg.learner_config("sft")
            sft = SFT(sft_config, vector_env_from(cfg.env, sft_config.num_envs), teacher)
            _run_learner(
                sft,
                dataclasses.replace(cfg, eval_every=cfg.sft_updates),
                cfg.sft_updates,
                run_dir / "sft",
                f"sft seed {cfg.seed}",
            )
            warm = sft.network
        config = cfg.learner_config(cfg.algo)
        learner = LEARNERS[cfg.algo](config, vector_env_from(cfg.env, config.num_envs), warm_start=warm)
        final = _run_learner(learner, cfg, cfg.updates, run_dir, f"{cfg.algo} seed {cfg.seed}")
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
