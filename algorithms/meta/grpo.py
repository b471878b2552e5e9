"""GRPO (DeepSeekMath, https://arxiv.org/abs/2402.03300), per agent.

The only change w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner` is
:meth:`GRPO.compute_advantages`: each agent's return, standardized within its group
(:func:`~algorithms.core.advantages.grpo_advantages`).
"""

from __future__ import annotations

from functools import partial

import torch

from algorithms.core.advantages import grpo_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.meta.base import PolicyGradientLearner
from algorithms.meta.config import GRPOConfig


class GRPO(PolicyGradientLearner):
    """Per agent: A = (R_i - mean_group) / (std_group + eps)."""

    config_class = GRPOConfig
    name = "grpo"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Group-standardized advantages of each agent's return:
        A_{g,i} = (R_{g,i} - mean_h R_{h,i}) / (std_h R_{h,i} + eps) (the std of the agent's
        whole batch with ``scale_rewards="batch"``, none with ``"none"``).

        Args:
            returns: (B, G, n_agents) each agent's episode return.

        Returns:
            Advantages (B, G, n_agents).
        """
        return per_agent_groups(partial(grpo_advantages, eps=self.config.eps, scale=self.config.scale_rewards), returns)
