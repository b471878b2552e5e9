"""The meta family's configs, in one module that imports no torch (the ``deliberate``
command line reads them for its options and help): every learner's
(:class:`LearnerConfig`, :class:`PolicyGradientConfig` and the four algorithms'), a training
run's (:class:`TrainConfig`) and a comparison's (:class:`CompareConfig`). The learners,
:func:`algorithms.meta.train.train` and :func:`algorithms.meta.compare.compare` use them;
each is importable from its learner's module too.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from algorithms.core.checks import check_positive
from algorithms.core.compare import algo_names, check_algos
from algorithms.core.config import GroupSettings, GRPOSettings, LearnerSettings
from algorithms.meta import baselines
from deliberation_env.arguments import DEFAULT_TASK
from deliberation_env.meta.config import EnvConfig

Algo = Literal["softrankpo", "grpo", "magrpo", "sft"]
ALGOS = typing.get_args(Algo)
"""The learners by name (as the CLI and the harness spell them)."""
RESUMABLE = ("updates", "eval_every", "run_dir", "resume", "progress", "tensorboard", "wandb_project")
"""The settings of a :class:`TrainConfig` that a resumed run may give other values than its first part had."""
COMPARE_RESUMABLE = ("out_dir", *(f"train.{name}" for name in RESUMABLE))
"""The settings of a :class:`CompareConfig` that a resumed comparison may change."""


# ---------------------------------------------------------------------------- learners
@dataclass
class LearnerConfig(LearnerSettings):
    """What every meta-policy learner shares: the settings of every learner
    (:class:`~algorithms.core.config.LearnerSettings`), the network and the seed pool."""

    hidden_size: int = 64
    """Width of the meta-policy network; divisible by ``num_heads``."""
    num_heads: int = 4
    """Attention heads of the network's self-over-peers cross-attention."""
    seed_pool: int = 0
    """Draw every episode seed from ``{0, ..., seed_pool - 1}``; 0: a fresh 62-bit seed per
    group. With a pool, an LLM team revisits the same histories (their outputs depend only
    on episode seed, problem and history), so the response cache serves them: training on
    cached rollouts, at cache speed once the pool's histories have been generated."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seed_pool < 0:
            raise ValueError(f"{type(self).__name__}.seed_pool must be >= 0 (0: no pool), got {self.seed_pool}")
        check_positive(self, "hidden_size", "num_heads")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_heads "
                f"({self.num_heads}); e.g. hidden_size={self.num_heads * 16}"
            )


@dataclass
class PolicyGradientConfig(LearnerConfig, GroupSettings):
    """Group rollouts and the clipped, KL-regularized policy gradient
    (:class:`~algorithms.core.config.GroupSettings`) on the meta-policy network. The vector
    env must have ``num_envs = groups_per_update * group_size``."""

    @property
    def num_envs(self) -> int:
        """The vector env size this config needs: B * G."""
        return self.groups_per_update * self.group_size


@dataclass
class GRPOConfig(PolicyGradientConfig, GRPOSettings):
    """GRPO: the shared policy-gradient settings plus the standardization epsilon
    (:class:`~algorithms.core.config.GRPOSettings`, declared once for both families)."""


@dataclass
class MAGRPOConfig(PolicyGradientConfig):
    """MAGRPO: the shared policy-gradient settings plus the choice of joint return."""

    joint_return: Literal["sum", "team"] = "sum"
    """``sum``: the sum of the agents' returns; ``team``: the team reward (1 if the final
    consensus is correct), which ignores ``reward_scale`` and the reward weights."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.joint_return not in ("sum", "team"):
            raise ValueError(f"joint_return must be 'sum' or 'team', got {self.joint_return!r}")


@dataclass
class SoftRankPOConfig(PolicyGradientConfig):
    """SoftRankPO: the shared policy-gradient settings plus the soft-rank temperature."""

    tau: float = 0.5
    """Soft-rank temperature (> 0): small values approach hard ranks."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.tau > 0:
            raise ValueError(
                f"tau must be > 0 (the soft-rank temperature), got {self.tau}; try tau=0.5"
            )


@dataclass
class SFTConfig(LearnerConfig):
    """Behaviour cloning: the shared network/optimizer settings plus the batch size."""

    learning_rate: float = 1e-3
    """Adam learning rate."""
    episodes_per_update: int = 256
    """Episodes collected per update; the vector env must have this many envs."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "episodes_per_update")

    @property
    def num_envs(self) -> int:
        """The vector env size this config needs."""
        return self.episodes_per_update


# ---------------------------------------------------------------------------- a run, a comparison
TRAINING_DIFFICULTY = 3
"""The arithmetic difficulty of a run that gives none (the learning benchmarks'); the
default applies to arithmetic only, another task takes no difficulty."""


def default_env() -> EnvConfig:
    """The env of the learning benchmarks: the simulated team on arithmetic (at
    :data:`TRAINING_DIFFICULTY`, :meth:`TrainConfig.with_task_defaults`)."""
    return EnvConfig(team="simulated")


@dataclass
class TrainConfig:
    """One training run (``deliberate train``; ``--config FILE`` starts from a config file)."""

    algo: Algo = "softrankpo"
    """Learner to train."""
    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=default_env)
    """The training env (:class:`deliberation_env.meta.config.EnvConfig`, any task and team;
    arithmetic given no difficulty plays :data:`TRAINING_DIFFICULTY`); evaluation uses the
    same env on the test split."""
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
        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {sorted(ALGOS)}, got {self.algo!r}")
        for name in ("updates", "eval_every", "eval_problems"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.sft_updates < 0:
            raise ValueError(f"sft_updates must be >= 0 (0: no warm start), got {self.sft_updates}")
        if self.warm_start and not Path(self.warm_start).is_file():
            raise ValueError(
                f"warm_start {self.warm_start!r} is not a file: give an SFT checkpoint "
                f"(e.g. <run_dir>/sft/checkpoint.safetensors) or leave it empty"
            )

    def with_task_defaults(self) -> TrainConfig:
        """This run with its task's defaults: arithmetic given no difficulty plays
        :data:`TRAINING_DIFFICULTY` (what :func:`~algorithms.meta.train.train` and
        :func:`~algorithms.meta.compare.compare` run and record); another task is unchanged.

        >>> TrainConfig().with_task_defaults().env.difficulty, TrainConfig().env.difficulty
        (3, None)
        """
        env = self.env
        if env.task != DEFAULT_TASK or env.difficulty is not None or "difficulty" in (env.task_kwargs or {}):
            return self
        return dataclasses.replace(self, env=dataclasses.replace(env, difficulty=TRAINING_DIFFICULTY))

    def learner_config(self, algo: str) -> Any:
        """The config of ``algo`` with the run's seed and pools."""
        return dataclasses.replace(
            getattr(self, algo),
            seed=self.seed,
            problem_pool=self.problem_pool,
            seed_pool=self.seed_pool,
        )


@dataclass
class CompareConfig:
    """An optimizer comparison (``deliberate compare``): every algorithm x seed x reward scale
    (``--config FILE`` starts from a config file)."""

    algos: algo_names(ALGOS) = ("softrankpo", "grpo", "magrpo")
    """Learners to compare (softrankpo, grpo, magrpo, sft): ``sft`` adds the warm start
    itself as a row; a learner of your own by import path, ``./mine.py:Mine`` (on the
    command line; from Python, a name given in ``learners=`` of
    :func:`algorithms.meta.compare.compare`). A learner of your own gets GRPO's config (``--grpo.*``)."""
    seeds: int = 3
    """Seeds per (algorithm, reward scale): seeds 0 .. seeds-1."""
    reward_scales: tuple[float, ...] = (1.0,)
    """Reward scales to run every learner under (the ablation); baselines do not depend on it."""
    baselines: tuple[str, ...] = (
        "independent",
        "debate",
        "minority-concedes",
        "confidence-threshold",
        "random",
        "oracle",
    )
    """Baselines (:mod:`algorithms.meta.baselines`) evaluated on the same held-out problems and seeds."""
    train: Annotated[TrainConfig, tyro.conf.arg(name="")] = field(default_factory=TrainConfig)
    """Template of every run: env, budget (``updates``, batch sizes), warm start, evaluation
    (its ``algo``, ``seed``, ``run_dir`` and ``env.reward_scale`` are set per run; its
    ``progress`` shows a bar over the runs, and ``resume`` continues a comparison in ``out_dir``)."""
    out_dir: str = ""
    """Folder of every run's files and the comparison's CSV, JSON and plots; ``""``: a new
    one, ``runs/compare/meta-<algos>-<YYYYmmdd-HHMMSS>``. A folder that holds a comparison
    is refused unless ``train.resume``."""

    def __post_init__(self) -> None:
        check_algos(self.algos)
        unknown = [b for b in self.baselines if b not in baselines.BASELINES]
        if unknown:
            raise ValueError(f"unknown baselines {unknown}; known: {sorted(baselines.BASELINES)}")
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if not self.reward_scales or min(self.reward_scales) <= 0:
            raise ValueError(f"reward_scales must be positive numbers, got {self.reward_scales}")
        budgets = [a for a in self.algos if a in ALGOS and a != "sft"]
        if any(a not in ALGOS for a in self.algos):
            budgets.append("grpo")  # a learner of one's own gets GRPO's config
        sizes = {a: getattr(self.train, a).num_envs for a in budgets}
        if len(set(sizes.values())) > 1:
            raise ValueError(
                f"every learner must get the same budget, but episodes per update differ: {sizes}; "
                "set the same groups_per_update and group_size for each algorithm"
                + (" (a learner of your own gets grpo's: --grpo.groups-per-update, --grpo.group-size)" if "grpo" in budgets and "grpo" not in self.algos else "")
            )
        if "sft" in self.algos and not self.train.sft_updates:
            raise ValueError("algos includes 'sft' but train.sft_updates is 0: give it SFT updates")
