"""The meta family's configs, in one module that imports no torch (the ``deliberate``
command line reads them for its options and help). A learner config composes its parts as
the text family's do: ``env`` (:class:`~deliberation_env.meta.config.EnvConfig`), ``run``
(:class:`~algorithms.core.config.RunConfig`: updates, run folder, evaluation, checkpoints,
logging) and the learner's own fields; on the command line none has a prefix
(``deliberate train meta grpo --task gsm8k --updates 50 --kl-coef 0.1``). A
policy-gradient learner's SFT warm start is two of its own fields, ``sft_updates`` and
``warm_start`` (:meth:`PolicyGradientConfig.warm_start_config`). A comparison
(:class:`CompareConfig`) takes one template of the settings every learner shares.
:func:`algorithms.meta.train.train` and :func:`algorithms.meta.compare.compare` use them.

>>> config = GRPOConfig(run=RunConfig(updates=3), kl_coef=0.1)
>>> config.env.team, config.run.updates, config.kl_coef, config.num_envs
('simulated', 3, 0.1, 256)
"""

from __future__ import annotations

import dataclasses
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from algorithms.core.checks import check_positive
from algorithms.core.compare import (
    algo_names,
    check_algos,
    check_own_settings,
    config_of_own,
    learner_config,
    own_settings,
)
from algorithms.core.config import GroupSettings, GRPOSettings, LearnerSettings, RunConfig
from algorithms.meta import baselines
from deliberation_env.arguments import DEFAULT_TASK, build_task
from deliberation_env.meta.config import EnvConfig
from deliberation_env.tasks import problem_count

Algo = Literal["softrankpo", "grpo", "magrpo", "sft"]
ALGOS = typing.get_args(Algo)
"""The learners by name (as the CLI and the harness spell them)."""
TRAINING_DIFFICULTY = 3
"""The arithmetic difficulty of a run that gives none (the learning benchmarks'); the
default applies to arithmetic only, another task takes no difficulty."""


def default_env() -> EnvConfig:
    """The env of the learning benchmarks: the simulated team on arithmetic (at
    :data:`TRAINING_DIFFICULTY`, :func:`with_task_defaults`)."""
    return EnvConfig(team="simulated")


# ---------------------------------------------------------------------------- learners
RECORDED_BY = "recorded_by"
"""What a run folder's ``config.json`` records beside the settings: the package that wrote
it (``deliberation-env 0.2.0``), which marks the file as a run's record, so that a copy of it
given as ``--config`` starts a new run rather than continuing the one it names."""
WARM_START_DIGEST = "warm_start_sha256"
"""What a run folder's ``config.json`` records of a warm start beside the settings: its
checkpoint's SHA-256, so a resumed run may find it at another path (a comparison's folder
moved) but never another checkpoint."""


@dataclass
class LearnerConfig(LearnerSettings):
    """What every meta-policy learner shares: the env, the run, the settings of every
    learner (:class:`~algorithms.core.config.LearnerSettings`), the network, the seed pool
    and the held-out episodes' seed."""

    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=default_env)
    """The training env (any task and team; arithmetic given no difficulty plays
    :data:`TRAINING_DIFFICULTY`); evaluation uses the same env on the test split."""
    run: Annotated[RunConfig, tyro.conf.arg(name="")] = field(default_factory=RunConfig)
    """The run: updates, folder, held-out evaluation, checkpoints, logging."""
    hidden_size: int = 64
    """Width of the meta-policy network; divisible by ``num_heads``."""
    num_heads: int = 4
    """Attention heads of the network's self-over-peers cross-attention."""
    seed_pool: int = 0
    """Draw every episode seed from ``{0, ..., seed_pool - 1}``; 0: a fresh 62-bit seed per
    group. With a pool, an LLM team revisits the same histories (their outputs depend only
    on episode seed, problem and history), so the response cache serves them: training on
    cached rollouts, at cache speed once the pool's histories have been generated."""
    eval_seed: int = 0
    """Seed of the held-out episodes; keep it fixed across runs so that every run and
    baseline is evaluated on identical episodes (common random numbers)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.env.observation not in ("vector", "both"):
            raise ValueError(
                f"--observation {self.env.observation}: the meta learners read the vector observations, "
                "so give --observation vector (the default) or both"
            )
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
    env must have ``num_envs = groups_per_update * group_size``. The learner starts from an
    SFT warm start: ``sft_updates`` of behaviour cloning first (:meth:`warm_start_config`),
    or the checkpoint ``warm_start``."""

    sft_updates: int = 20
    """SFT warm-start updates before training (the initial policy and KL reference),
    written in ``run_dir/sft``; 0 starts from a fresh network (or from ``warm_start``)."""
    warm_start: str = ""
    """Path of an SFT checkpoint to start from instead of training one (then
    ``sft_updates`` is not used)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sft_updates < 0:
            raise ValueError(f"sft_updates must be >= 0 (0: no warm start), got {self.sft_updates}")
        if self.warm_start and not Path(self.warm_start).is_file():
            raise ValueError(
                f"warm_start {self.warm_start!r} is not a file: give an SFT checkpoint "
                f"(e.g. <run_dir>/sft/checkpoint.safetensors) or leave it empty"
            )

    @property
    def num_envs(self) -> int:
        """The vector env size this config needs: B * G."""
        return self.groups_per_update * self.group_size

    def warm_start_config(self, run_dir: str | None) -> SFTConfig:
        """The SFT warm start's config: this config's env, network, seed and pools, and its
        batch (``episodes_per_update`` = :attr:`num_envs`), SFT's own defaults otherwise
        (its learning rate); ``sft_updates`` updates in ``run_dir``, evaluated first and last."""
        shared = ("env", "hidden_size", "num_heads", "seed", "problem_pool", "seed_pool", "eval_seed")
        interval = self.sft_updates if self.run.eval_problems else 0
        run = dataclasses.replace(self.run, updates=self.sft_updates, eval_interval=interval, run_dir=run_dir)
        return SFTConfig(**{name: getattr(self, name) for name in shared}, run=run, episodes_per_update=self.num_envs)


@dataclass
class GRPOConfig(PolicyGradientConfig, GRPOSettings):
    """GRPO: the shared policy-gradient settings plus the standardization epsilon ``eps``
    and ``scale_rewards`` (declared once for both families, in ``GRPOSettings``)."""


@dataclass
class MAGRPOConfig(PolicyGradientConfig):
    """MAGRPO: the shared policy-gradient settings plus the choice of joint return."""

    joint_return: Literal["sum", "team"] = "team"
    """``team`` (MAGRPO's joint reward): the team reward, 1 if the final consensus is
    correct (it ignores ``reward_scale``, the reward weights and the token cost);
    ``sum``: the sum of the agents' returns. The sum is no team objective: each r_global
    is a leave-one-out difference, paid at every step, so a right consensus with one
    wrong dissenter pays its two pivotal agents +1 each per round, and a team whose
    dissenter stays wrong out-earns one that agrees (6 against 1 over three rounds of three
    agents). The default was ``sum`` until 2026-11-30; a learner trained on it is paid
    for keeping a dissenter wrong: on the simulated team (two agents, three rounds, 100
    arithmetic problems) two agents that always PERSIST earn 2.2 times the oracle's summed
    return while their team ends right less often (0.93 against 0.98; red team 39)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.joint_return not in ("sum", "team"):
            raise ValueError(f"joint_return must be 'sum' or 'team', got {self.joint_return!r}")
        env = self.env
        if self.joint_return == "team" and (env.lambda_tok > 0 or (env.w_local, env.w_global) != (1.0, 1.0)):
            warnings.warn(
                f"MAGRPO trains on the team reward (joint_return='team'), which lambda_tok={env.lambda_tok:g}, "
                f"w_local={env.w_local:g} and w_global={env.w_global:g} do not enter: give joint_return='sum' "
                "to train on them",
                stacklevel=3,
            )


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


# ---------------------------------------------------------------------------- a comparison
CONFIGS: dict[str, type[LearnerConfig]] = {
    "softrankpo": SoftRankPOConfig,
    "grpo": GRPOConfig,
    "magrpo": MAGRPOConfig,
    "sft": SFTConfig,
}
"""Each learner's config class by name."""
POLICY_GRADIENT_CONFIGS = {name: config for name, config in CONFIGS.items() if name != "sft"}
"""The configs of the learners with settings of their own (SFT has none), which a learner of
one's own may derive its config from (:func:`~algorithms.core.compare.config_of_own`)."""


def algo_of(config: LearnerConfig) -> str:
    """The name of the learner whose config class ``config`` is (exactly).

    Raises:
        TypeError: For another class.
    """
    for name, kind in CONFIGS.items():
        if type(config) is kind:
            return name
    raise TypeError(f"config must be one of {', '.join(kind.__name__ for kind in CONFIGS.values())}, got {type(config).__name__}")


def with_task_defaults(config: LearnerConfig) -> LearnerConfig:
    """``config`` with its task's defaults: arithmetic given no difficulty plays
    :data:`TRAINING_DIFFICULTY` (what :func:`~algorithms.meta.train.train` and
    :func:`~algorithms.meta.compare.compare` run and record); another task is unchanged.

    >>> with_task_defaults(GRPOConfig()).env.difficulty, GRPOConfig().env.difficulty
    (3, None)
    """
    env = config.env
    if env.task != DEFAULT_TASK or env.difficulty is not None or "difficulty" in (env.task_kwargs or {}):
        return config
    return dataclasses.replace(config, env=dataclasses.replace(env, difficulty=TRAINING_DIFFICULTY))


def with_held_out_problems(config: LearnerConfig) -> LearnerConfig:
    """``config`` with ``run.eval_problems`` at most its task's test split (the whole split
    where it has fewer, with a warning: :func:`~deliberation_env.tasks.problem_count`), so
    the recorded config, the tables and their intervals give the number evaluated. A
    client's ``--task gsm8k --path sample`` asked for the default 200 of 4 and failed
    after the run's folder was written.
    """
    if not config.run.eval_problems:
        return config
    task = build_task(config.env)
    task.problems("train")  # what training reads: a missing train split is named first, not after a warning
    split_size = len(task.problems("test"))
    count = problem_count(config.run.eval_problems, split_size, "test", "--eval-problems")
    return dataclasses.replace(config, run=dataclasses.replace(config.run, eval_problems=count))


MAGRPOOwn = own_settings(MAGRPOConfig, PolicyGradientConfig, "MAGRPOOwn", __name__)
GRPOOwn = own_settings(GRPOConfig, PolicyGradientConfig, "GRPOOwn", __name__)
SoftRankPOOwn = own_settings(SoftRankPOConfig, PolicyGradientConfig, "SoftRankPOOwn", __name__)


@dataclass
class CompareConfig:
    """An optimizer comparison (``deliberate compare meta``): every algorithm x seed x reward
    scale on the same settings (``--config FILE`` starts from a config file)."""

    learner: Annotated[PolicyGradientConfig, tyro.conf.arg(name="")] = field(default_factory=PolicyGradientConfig)
    """The template of every run: the env, the run (updates, evaluation, logging), the
    settings every learner shares and the warm start; each learner's own settings (``tau``,
    ``eps``, ``joint_return``) are the fields named after it (``--softrankpo.tau``), SFT's
    batch keeps its default. Its ``seed`` and
    ``run.run_dir`` are set per run and ``env.reward_scale`` per reward scale; its
    ``run.progress`` shows a bar over the runs, and ``run.resume`` continues a comparison in
    ``out_dir``."""
    algos: algo_names(ALGOS) = ("softrankpo", "grpo", "magrpo")
    """Learners to compare (softrankpo, grpo, magrpo, sft): ``sft`` adds the warm start
    itself as a row; a learner of your own by import path, ``./mine.py:Mine`` (on the
    command line; from Python, a name given in ``learners=`` of
    :func:`algorithms.meta.compare.compare`), built with the template as a :class:`GRPOConfig`."""
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
    out_dir: str = ""
    """Folder of every run's files and the comparison's CSV, JSON and plots; ``""``: a new
    one, ``runs/compare/meta-<algos>-<YYYYmmdd-HHMMSS>``. A folder that holds a comparison
    is refused unless ``--resume``."""
    softrankpo: SoftRankPOOwn = field(default_factory=SoftRankPOOwn)
    """SoftRankPO's own settings (``--softrankpo.tau 0.3``)."""
    grpo: GRPOOwn = field(default_factory=GRPOOwn)
    """GRPO's own settings (``--grpo.scale-rewards none``), also those of a learner of your own
    whose config is GRPO's or derives from it (one derived from another learner's config takes
    that learner's)."""
    magrpo: MAGRPOOwn = field(default_factory=MAGRPOOwn)
    """MAGRPO's own settings (``--magrpo.joint-return sum``)."""

    def __post_init__(self) -> None:
        check_algos(self.algos)
        check_own_settings(self, self.algos, ("softrankpo", "grpo", "magrpo"), ALGOS)
        unknown = [b for b in self.baselines if b not in baselines.BASELINES]
        if unknown:
            raise ValueError(f"unknown baselines {unknown}; known: {sorted(baselines.BASELINES)}")
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if not self.reward_scales or min(self.reward_scales) <= 0:
            raise ValueError(f"reward_scales must be positive numbers, got {self.reward_scales}")
        if "sft" in self.algos and not self.learner.sft_updates:
            raise ValueError("algos includes 'sft' but sft_updates is 0: give it SFT updates")

    def run_config(
        self, algo: str, seed: int, run_dir: Path, reward_scale: float, learner: Any = None
    ) -> LearnerConfig:
        """The config of the learner named ``algo`` at ``seed`` and ``reward_scale`` in
        ``run_dir``: the template's shared settings and the learner's own; ``sft`` is the
        template's warm start. A learner of one's own (``learner``, its class) gets its
        ``config_class`` where that derives from a shipped learner's config, with that
        learner's own settings, and a :class:`GRPOConfig` with GRPO's otherwise
        (:func:`~algorithms.core.compare.config_of_own`)."""
        template = dataclasses.replace(
            self.learner,
            seed=seed,
            env=dataclasses.replace(self.learner.env, reward_scale=reward_scale),
            run=dataclasses.replace(self.learner.run, run_dir=str(run_dir), progress=False),
        )
        if algo == "sft":
            return template.warm_start_config(str(run_dir))
        shared = {f.name: getattr(template, f.name) for f in dataclasses.fields(PolicyGradientConfig)}
        if algo in CONFIGS:
            return learner_config(CONFIGS[algo], shared, getattr(self, algo))
        config, shipped = config_of_own(learner, POLICY_GRADIENT_CONFIGS, PolicyGradientConfig)
        return learner_config(config, shared, getattr(self, shipped) if shipped else None)
