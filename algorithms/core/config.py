"""The settings both families' learners share, each declared once with its default,
documentation and check.

:class:`LearnerSettings` is what every learner has (the meta family's SFT too),
:class:`GroupSettings` adds the group policy gradient's, :class:`GRPOSettings` GRPO's
standardization epsilon. A family's learner config extends
them with its own fields (:class:`algorithms.meta.base.LearnerConfig`,
:class:`algorithms.text.config.TextLearnerConfig`); the text family sets other defaults for
some (LLM weights: a smaller batch, one pass, no KL), in one block of its config.
"""

from __future__ import annotations

from dataclasses import dataclass

from algorithms.core.checks import check_positive


@dataclass
class LearnerSettings:
    """The optimizer and the training problems: what every learner shares."""

    learning_rate: float = 3e-4
    """Adam learning rate."""
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
        check_positive(self, "learning_rate", "update_epochs", "num_minibatches", "max_grad_norm")


@dataclass
class GroupSettings(LearnerSettings):
    """Group rollouts and the clipped, KL-regularized policy gradient."""

    groups_per_update: int = 32
    """B: problems per update."""
    group_size: int = 8
    """G: rollouts per problem, all from the same start state, >= 2 (the group whose returns
    the advantages compare)."""
    clip_eps: float = 0.2
    """Clipping range epsilon of the importance ratio."""
    kl_coef: float = 0.02
    """beta: weight of the KL to the frozen reference policy (the warm start, or the base
    model without adapters); 0 switches it off."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "groups_per_update", "clip_eps")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be >= 2 (advantages compare rollouts within a group), "
                f"got {self.group_size}; the usual values are 4 to 16"
            )
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0 (0 switches the KL term off), got {self.kl_coef}")


@dataclass
class GRPOSettings(GroupSettings):
    """GRPO's own setting beside the group settings, shared by both families' GRPO configs
    (:class:`algorithms.meta.config.GRPOConfig`, :class:`algorithms.text.TextGRPOConfig`)."""

    eps: float = 1e-6
    """Added to the group standard deviation (>= 0)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}; the usual value is 1e-6")
