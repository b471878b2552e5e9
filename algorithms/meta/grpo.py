"""GRPO (DeepSeekMath, https://arxiv.org/abs/2402.03300), per agent.

The only change w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner` is
:meth:`GRPO.compute_advantages`: each agent's return, standardized within its group
(:func:`~algorithms.core.advantages.grpo_advantages`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from algorithms.core.advantages import grpo_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.meta.base import PolicyGradientConfig, PolicyGradientLearner


@dataclass
class GRPOConfig(PolicyGradientConfig):
    """GRPO: the shared policy-gradient settings plus the standardization epsilon."""

    eps: float = 1e-6
    """Added to the group standard deviation (>= 0)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}; the usual value is 1e-6")


class GRPO(PolicyGradientLearner):
    """Per agent: A = (R_i - mean_group) / (std_group + eps)."""

    config_class = GRPOConfig
    name = "grpo"

    def compute_advantages(self, returns: torch.Tensor, team_rewards: torch.Tensor) -> torch.Tensor:
        """Group-standardized advantages of each agent's return, (B, G, n_agents)."""
        return per_agent_groups(partial(grpo_advantages, eps=self.config.eps), returns)
