"""The settings both families' learners share, each declared once with its default,
documentation and check.

:class:`RunConfig` is how a run goes (updates, folder, evaluation, checkpoints, logging),
the ``run`` part of every learner config of either family. :class:`LearnerSettings` is what every learner has (the meta family's SFT too),
:class:`GroupSettings` adds the group policy gradient's, :class:`GRPOSettings` GRPO's
standardization epsilon. A family's learner config extends
them with its own fields (:class:`algorithms.meta.base.LearnerConfig`,
:class:`algorithms.text.config.TextLearnerConfig`); the text family sets other defaults for
some (LLM weights: a smaller batch, one pass, no KL), in one block of its config.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from algorithms.core.checks import check_positive

LR_SCHEDULES = ("constant", "linear", "cosine")
"""The learning-rate schedules (:func:`algorithms.core.optimizers.learning_rate_factor`)."""
RewardScale = Literal["group", "batch", "none"]
REWARD_SCALES = get_args(RewardScale)
"""GRPO's reward scales (:func:`algorithms.core.advantages.grpo_advantages`)."""


@dataclass
class RunConfig:
    """How a run goes, whichever family: its length, folder, held-out evaluation,
    checkpoints and logging (the ``run`` part of a learner config; on the command line
    its fields have no prefix: ``--updates``, ``--run-dir``, ``--eval-interval``).

    One cadence rule for both families (:func:`algorithms.core.run.run`): with
    ``eval_problems``, a fresh run is evaluated before its first update (logged as step 0),
    every ``eval_interval`` updates and after the last; the checkpoint is written every
    ``checkpoint_interval`` updates and after the last. A family sets other defaults in one
    block (the text family's :func:`algorithms.text.config.text_run`).
    """

    updates: int = 100
    """Updates to run (a resumed run continues up to this many)."""
    run_dir: str | None = ""
    """Folder of config.json, metrics.jsonl, checkpoint.safetensors and summary.json (and,
    for the LLM-weight learners, adapters/ and learning_curves.png); ``""``:
    a new one, ``runs/train/<family>-<algo>-seed<seed>-<YYYYmmdd-HHMMSS>``; ``None`` (from
    Python): no folder, nothing is written. A folder that holds a run is refused without
    ``resume``."""
    resume: bool = False
    """Continue the run in ``run_dir`` from its checkpoint (refused, before anything is
    written, if it was started with other settings than the run settings)."""
    resume_from: str = ""
    """Continue the run from one of its kept checkpoints (``keep_checkpoints``) rather than
    its newest, as TRL's ``resume_from_checkpoint=<path>``: the kept folder's name
    (``update-000004``), its update (``4``) or its path (``runs/x/checkpoints/update-000004``,
    which also names ``run_dir``). The updates after it are dropped from the run's log and
    kept checkpoints; implies ``resume``."""
    eval_interval: int = 10
    """Evaluate on the held-out problems every this many updates, and after the last; 0:
    before the first update and after the last only."""
    eval_problems: int = 200
    """Held-out (test split) problems per evaluation: the first ``eval_problems``; 0: no
    evaluation."""
    checkpoint_interval: int = 1
    """Write the checkpoint every this many updates, and after the last; 0: after the last only."""
    keep_checkpoints: int = 0
    """Also keep each checkpoint written as ``checkpoints/update-NNNNNN/`` in the run folder
    (with the LoRA adapters written with it), this many of the newest at most, the oldest
    removed first (TRL's ``save_total_limit``; hard links where the file system has them, so a
    kept copy of the newest costs no space); 0: only the newest, ``checkpoint.safetensors``."""
    progress: bool = True
    """Show a progress bar."""
    tensorboard: bool = False
    """Also log to TensorBoard in ``run_dir`` (needs the ``tensorboard`` extra)."""
    wandb_project: str = ""
    """Also log to this Weights & Biases project, same metric names (needs the ``wandb``
    extra and a run folder; ``WANDB_MODE=offline`` keeps it in ``run_dir/wandb``); ``""``: off."""

    def __post_init__(self) -> None:
        for name in ("updates", "eval_interval", "eval_problems", "checkpoint_interval", "keep_checkpoints"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.resume_from:
            self.resume = True
            kept = Path(self.resume_from)
            if self.run_dir == "" and len(kept.parts) > 1:  # a path names the run too
                self.run_dir = str(kept.parent.parent)
        if self.eval_interval and not self.eval_problems:
            raise ValueError("eval_interval evaluates the eval_problems held-out problems: give eval_problems > 0 too")
        if self.wandb_project and self.run_dir is None:
            raise ValueError("wandb_project logs the metrics of the run folder: give run_dir (or \"\" for a new one)")


ADDED_SETTINGS: dict[str, Any] = {
    "weight_decay": 0.0,
    "lr_schedule": "constant",
    "warmup_updates": 0,
    "top_k": 0,
    "clip_eps_high": None,
    "scale_rewards": "group",
    "importance_sampling": "token",
    "resume_from": "",
    "log_completions": 0,
    "mask_truncated_completions": False,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "shapley": False,
    "rollout": "parallel",
    "chat_template_kwargs": {},
    "cast_lm_head_to_fp32": False,
    "compile_scope": "auto",
}
"""Settings added since release 0.2 (the learners' optimizer and loss, the text learners'
``top_k``, ``min_p``, ``repetition_penalty``, ``mask_truncated_completions``, ``rollout``,
``chat_template_kwargs``, ``cast_lm_head_to_fp32`` and ``compile_scope``, the text
env's ``shapley``, a run's ``resume_from`` and ``log_completions``), with the value every run it
recorded trained with: a run folder recorded without one resumes where it has this value
(:func:`algorithms.core.run_dirs.changed_settings`)."""
ADDED_OWN_SETTINGS: dict[str, Any] = {
    "grpo.eps": 1e-6,
    "grpo.scale_rewards": "group",
    "softrankpo.tau": 0.5,
    "magrpo.baseline": "mean",
    "magrpo.normalize_advantages": False,
    "magrpo.joint_return": "team",
}
"""A comparison's learners' own settings (``compare --grpo.eps``), added since release 0.2,
by their dotted names in its record, with the values its runs trained with: a comparison
folder recorded without them resumes where they have these values."""

KEPT_ON_RESUME = ("eval_problems",)
"""The :class:`RunConfig` settings a resumed run keeps: every evaluation of a run plays the
same held-out problems, so its "before -> after" compares like with like."""


def run_settings(prefix: str = "run.") -> tuple[str, ...]:
    """The names of the :class:`RunConfig` settings a resumed run may change, under
    ``prefix``: its length, folder, evaluation cadence, checkpoints and logging (all but
    :data:`KEPT_ON_RESUME`).

    >>> run_settings()[:2], "run.eval_problems" in run_settings()
    (('run.updates', 'run.run_dir'), False)
    """
    return tuple(prefix + field.name for field in dataclasses.fields(RunConfig) if field.name not in KEPT_ON_RESUME)


@dataclass
class LearnerSettings:
    """The optimizer and the training problems: what every learner shares."""

    learning_rate: float = 3e-4
    """Adam's learning rate (the peak of ``lr_schedule``)."""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay on the weight matrices (none on biases, norms or other
    vectors, as in transformers' ``Trainer``); 0: plain Adam
    (:func:`algorithms.core.optimizers.adam`)."""
    lr_schedule: Literal["constant", "linear", "cosine"] = "constant"
    """How the learning rate moves over the run's ``updates`` after the warm-up: held, or
    decayed towards 0 at the end along a line (TRL's default) or a half cosine; set per update
    (:mod:`algorithms.core.optimizers`), logged as ``charts/learning_rate``."""
    warmup_updates: int = 0
    """Updates over which the learning rate rises linearly to ``learning_rate`` (update u
    of them at (u + 1) / (warmup_updates + 1) of it)."""
    update_epochs: int = 4
    """Passes over each collected batch."""
    num_minibatches: int = 4
    """Optimizer steps per pass (the batch is split evenly)."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm."""
    seed: int = 0
    """Seeds the policy's initialization and the sampling of problems, episode seeds and actions."""
    problem_pool: int = 0
    """Train on the first this many problems of the training split only; 0: all of them."""

    def __post_init__(self) -> None:
        if self.problem_pool < 0:
            raise ValueError(f"{type(self).__name__}.problem_pool must be >= 0 (0: no pool), got {self.problem_pool}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0 (numpy's generators take no negative seed), got {self.seed}")
        check_positive(self, "learning_rate", "update_epochs", "num_minibatches", "max_grad_norm", infinite=("max_grad_norm",))
        if not 0 <= self.weight_decay < math.inf:  # NaN too: it would turn every adapter into NaN
            raise ValueError(f"weight_decay must be a number >= 0 (0: plain Adam), got {self.weight_decay}")
        if self.warmup_updates < 0:
            raise ValueError(f"warmup_updates must be >= 0 (0: no warm-up), got {self.warmup_updates}")
        updates = getattr(getattr(self, "run", None), "updates", None)  # a learner config's run
        if updates and self.warmup_updates >= updates:
            warnings.warn(
                f"warmup_updates={self.warmup_updates} outlasts the run's {updates} updates: the learning rate "
                f"never reaches learning_rate={self.learning_rate}",
                stacklevel=3,
            )
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")


@dataclass
class GroupSettings(LearnerSettings):
    """Group rollouts and the clipped, KL-regularized policy gradient."""

    groups_per_update: int = 32
    """B: problems per update."""
    group_size: int = 8
    """G: rollouts per problem, all from the same start state, >= 2 (the group whose returns
    the advantages compare)."""
    clip_eps: float = 0.2
    """Clipping range epsilon of the importance ratio: it is clipped to
    [1 - clip_eps, 1 + clip_eps_high]."""
    clip_eps_high: float | None = None
    """The upper clipping range (DAPO's clip-higher, TRL's ``epsilon_high``; DAPO takes
    0.28 beside ``clip_eps`` 0.2, so unlikely tokens of a good completion can gain more in
    one update); None: ``clip_eps``, symmetric clipping. Like ``clip_eps`` it acts only from the
    second optimizer step on a batch (``update_epochs`` or ``num_minibatches`` > 1): the first
    step's ratio is 1."""
    kl_coef: float = 0.02
    """beta: weight of the KL to the frozen reference policy (the warm start, or the base
    model without adapters); 0 switches it off."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "groups_per_update", "clip_eps")
        if self.clip_eps_high is not None and not 0 < self.clip_eps_high < math.inf:
            raise ValueError(f"clip_eps_high must be > 0 (None: clip_eps), got {self.clip_eps_high}")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be >= 2 (advantages compare rollouts within a group), "
                f"got {self.group_size}; the usual values are 4 to 16"
            )
        if not 0 <= self.kl_coef < math.inf:
            raise ValueError(f"kl_coef must be >= 0 and finite (0 switches the KL term off), got {self.kl_coef}")


@dataclass
class GRPOSettings(GroupSettings):
    """GRPO's own setting beside the group settings, shared by both families' GRPO configs
    (:class:`algorithms.meta.config.GRPOConfig`, :class:`algorithms.text.TextGRPOConfig`)."""

    eps: float = 1e-6
    """Added to the standard deviation (>= 0)."""
    scale_rewards: RewardScale = "group"
    """What the centred rewards are divided by (TRL's ``scale_rewards``;
    :func:`~algorithms.core.advantages.grpo_advantages`): the group's standard deviation
    (GRPO), the whole batch's (``batch``, per agent), or nothing (``none``: Dr. GRPO)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.eps < math.inf:
            raise ValueError(f"eps must be >= 0 and finite, got {self.eps}; the usual value is 1e-6")
        if self.scale_rewards not in REWARD_SCALES:
            raise ValueError(f"scale_rewards must be one of {', '.join(REWARD_SCALES)}, got {self.scale_rewards!r}")
