"""The learner skeleton both families follow: one update is collect -> returns ->
``compute_advantages`` -> loss, and one run of updates is :func:`~algorithms.core.run.run`.

:class:`Learner` is what the run loop drives and what a checkpoint restores (the meta
family's SFT is one); :class:`GroupPolicyGradient` is the group policy-gradient update of
both families, step by step:

1. ``collect``: B problems, G rollouts each from the same start state (a group).
2. ``returns``: each agent's return, (B, G, n) (the text family: one per turn). This is
   where a learner decides what an agent's return is (MAGRPO's: the team's joint return).
3. ``group_advantages``: the returns' advantages within each group, through
   ``compute_advantages(returns)``, (B, G, n) -> (B, G, n), **the one method a variant
   (GRPO, MAGRPO, SoftRankPO) overrides**; ``sample_advantages`` hands each trained sample
   its trajectory's advantage.
4. ``optimize``: the clipped policy-gradient loss (and KL) on the samples.

The meta family's learners are in :mod:`algorithms.meta.base`, the text family's in
:mod:`algorithms.text.base`; each fills these steps for its policy (a small network over
meta-actions, or the LLM's weights).
"""

from __future__ import annotations

import abc
import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import torch

from algorithms.core.checkpoints import check_learner_state, load_checkpoint, save_checkpoint
from algorithms.core.config import RunConfig
from algorithms.core.optimizers import schedule_learning_rate
from algorithms.core.run import run


class Learner(abc.ABC):
    """A trainable policy with an optimizer, an update counter and checkpoints.

    Subclasses set ``config``, ``venv``, ``optimizer`` and ``update`` and implement
    :meth:`train_step`, :meth:`state_dict` and :meth:`restore` (and :meth:`settings` where
    the default does not fit their config). A resumed run continues exactly only when
    :meth:`state_dict` holds every random state the updates draw from: draw from
    generators of the learner's own (``torch.Generator``, ``numpy.random.Generator``) and
    save them, not from torch's global one (``examples/05_custom_learner.py`` does).
    """

    RESUMABLE_FIELDS: ClassVar[tuple[str, ...]] = ("run", "env", "warm_start")
    """Config fields a resumed run may give otherwise (:meth:`settings`): the ``run`` part
    (more updates, other evaluations), the ``env`` (the run folder's ``config.json``
    records and checks it), and the ``warm_start`` path (the checkpoint holds what it gave)."""

    name: ClassVar[str] = "learner"
    headline: ClassVar[str] = "rewards/total/mean"
    """The metric a progress bar shows."""
    summary_metrics: ClassVar[tuple[str, ...]] = ()
    """Metrics of this learner's own (logged by its updates, or by its held-out evaluation)
    that ``compare text`` summarizes and tabulates beside the family's metrics, mean and
    95% interval over seeds (e.g. ``("adv/baseline_mean",)``); a learner without one shows
    "-" there."""
    config: Any
    venv: Any
    optimizer: torch.optim.Optimizer
    update: int

    config_class: ClassVar[type] = object
    """The config type this learner takes (:meth:`check_setup` refuses others)."""

    def check_setup(self, config: Any, venv: Any) -> None:
        """Refuse a config of another learner, or a ``problem_pool`` beyond ``venv``'s
        training problems, before anything is built.

        Raises:
            TypeError: If ``config`` is no :attr:`config_class`.
            ValueError: If ``config.problem_pool`` exceeds the training split.
        """
        if not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} needs a {self.config_class.__name__}, got {type(config).__name__}")
        if config.problem_pool > len(venv.problems):
            raise ValueError(
                f"problem_pool={config.problem_pool} exceeds the {len(venv.problems)} problems "
                "of the training split: lower it, or 0 to use them all"
            )

    @property
    def episodes(self) -> int:
        """Training episodes played so far: every update plays one per env."""
        return self.update * self.venv.num_envs

    @abc.abstractmethod
    def train_step(self) -> dict[str, float]:
        """One update; its metrics (see :mod:`algorithms.core.metrics`)."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue exactly where this one stands."""

    def schedule_learning_rate(self) -> dict[str, float]:
        """Set the optimizer to this update's learning rate where the config schedules one
        (``lr_schedule`` or ``warmup_updates`` over ``run.updates``:
        :func:`~algorithms.core.optimizers.schedule_learning_rate`; a constant rate is left
        as the optimizer has it); the metric ``charts/learning_rate``, the rate it steps at."""
        config = self.config
        if getattr(config, "lr_schedule", "constant") != "constant" or getattr(config, "warmup_updates", 0):
            schedule_learning_rate(self.optimizer, config, self.update, config.run.updates)
        return {"charts/learning_rate": float(self.optimizer.param_groups[0]["lr"])}

    def settings(self, config: Any) -> dict[str, Any]:
        """The entries of ``config`` that a resumed run must share with its checkpoint: every
        field of a dataclass config but :attr:`RESUMABLE_FIELDS`."""
        return {
            name: value
            for name, value in dataclasses.asdict(config).items()
            if name not in self.RESUMABLE_FIELDS
        }

    @abc.abstractmethod
    def restore(self, state: Mapping[str, Any]) -> None:
        """Set this learner to ``state``, already checked by :meth:`load_state_dict`."""

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output (same algorithm and settings), checked whole
        before anything changes (:func:`~algorithms.core.checkpoints.check_learner_state`).

        Raises:
            ValueError: On a checkpoint of another algorithm or config, naming the difference.
            CheckpointError: On a state that does not fit this learner (a damaged or
                tampered checkpoint), naming the entry.
        """
        check_learner_state(
            state,
            self.name,
            self.settings(self.config),
            self.settings(type(self.config)()),
            self.state_dict(),
            self.optimizer,
        )
        self.restore(state)

    def save(self, path: str | Path) -> None:
        """Write a checkpoint atomically (a killed run keeps the previous one)."""
        save_checkpoint(self.state_dict(), path)

    def load(self, path: str | Path) -> None:
        """Resume from a checkpoint written by :meth:`save` (tensors and JSON: loading runs no
        code; a pickled ``checkpoint.pt`` of an earlier version is refused, see
        :mod:`algorithms.core.checkpoints`)."""
        self.load_state_dict(load_checkpoint(path))

    def learn(self, run_config: RunConfig, evaluation: Callable[[], dict[str, float]] | None = None) -> list[dict[str, float]]:
        """Run updates until ``self.update == run_config.updates`` by
        :func:`~algorithms.core.run.run`'s rules (resume from ``run_dir``, metrics,
        checkpoints, ``evaluation()`` first, every ``eval_interval`` updates and at the end);
        a ``run_dir`` of ``""`` or ``None`` writes nothing here (each family's ``train`` names
        a new folder and records the run's settings).

        Returns:
            The metrics of every update of the run (a resumed run's earlier ones from its log).

        Raises:
            ValueError: Before anything is written, when ``run_dir`` holds a run that trained
                (a checkpoint or logged updates) and ``run_config.resume`` is False.
        """
        return run(self, run_config, evaluation, self.settings(self.config), self.headline).history


class GroupPolicyGradient(Learner):
    """One update of group rollouts and group-relative advantages (the module docstring).

    A family implements the steps for its policy; a variant overrides
    :meth:`compute_advantages` (returns (B, G, n) -> advantages (B, G, n)).
    """

    @abc.abstractmethod
    def collect(self) -> Any:
        """Play B problems G times each; the batch (with its ``metrics``)."""

    @abc.abstractmethod
    def returns(self, batch: Any) -> torch.Tensor:
        """The batch's returns, (B, G, n_agents) (or one such per turn)."""

    @abc.abstractmethod
    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        r"""Each agent's advantage within its group: the one method a variant overrides.

        Agent i's advantage in rollout g of group b depends only on the G returns of that
        agent in that group (the group is the baseline, no critic), e.g. GRPO's

        .. math::

            A_{b,g,i} = \frac{R_{b,g,i} - \operatorname{mean}_h R_{b,h,i}}
                             {\operatorname{std}_h R_{b,h,i} + \epsilon}.

        Args:
            returns: (B, G, n_agents) float: B groups of G rollouts, each agent's return as
                :meth:`returns` defines it (one turn's for the text family; MAGRPO's is
                the team's joint return, the same for every agent).

        Returns:
            Advantages (B, G, n_agents).
        """

    def group_advantages(self, batch: Any, returns: torch.Tensor) -> torch.Tensor:
        """The returns' advantages within each group: :meth:`compute_advantages` of them (a
        family whose returns have more axes, such as the text family's turns, overrides
        this to apply it to each)."""
        return self.compute_advantages(returns)

    @abc.abstractmethod
    def sample_advantages(self, batch: Any, advantages: torch.Tensor) -> torch.Tensor:
        """Each trained sample's advantage, (S,)."""

    @abc.abstractmethod
    def optimize(self, batch: Any, advantages: torch.Tensor) -> dict[str, float]:
        """Minimize the policy loss on the batch's samples; the ``losses/*`` metrics."""

    @abc.abstractmethod
    def update_metrics(
        self, returns: torch.Tensor, advantages: torch.Tensor, samples: torch.Tensor, seconds: float
    ) -> dict[str, float]:
        """The update's own metrics (advantage size, speed), from its returns, group and
        sample advantages and duration."""

    def train_step(self) -> dict[str, float]:
        """One update: collect -> returns -> advantages -> loss. Returns the metrics."""
        start = time.perf_counter()
        batch = self.collect()
        returns = self.returns(batch)
        advantages = self.group_advantages(batch, returns)
        if advantages.shape != returns.shape:  # a learner of one's own: named here, not in an index deep below
            raise ValueError(
                f"{type(self).__name__}.compute_advantages gave advantages of shape {tuple(advantages.shape)} "
                f"for returns of shape {tuple(returns.shape)}: it must give one advantage per return"
            )
        samples = self.sample_advantages(batch, advantages)
        learning_rate = self.schedule_learning_rate()
        losses = self.optimize(batch, samples)
        self.update += 1
        return {
            **batch.metrics,
            **losses,
            **learning_rate,
            **self.update_metrics(returns, advantages, samples, time.perf_counter() - start),
        }
