"""MAGRPO (https://arxiv.org/abs/2508.04652): one joint advantage for the whole team.

The only change w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner` is
:meth:`MAGRPO.compute_advantages`: the joint return of each trajectory minus its group
mean (:func:`~algorithms.core.advantages.magrpo_advantages`), shared by every agent of the
trajectory (centralized training, decentralized execution).
"""

from __future__ import annotations

import torch

from algorithms.core.advantages import magrpo_advantages
from algorithms.meta.base import PolicyGradientLearner
from algorithms.meta.config import MAGRPOConfig


class MAGRPO(PolicyGradientLearner):
    """A = R_joint - mean_group(R_joint), the same for every agent of a trajectory."""

    config_class = MAGRPOConfig
    name = "magrpo"

    def compute_advantages(self, returns: torch.Tensor, team_rewards: torch.Tensor) -> torch.Tensor:
        """Mean-centred joint-return advantages, broadcast to (B, G, n_agents)."""
        joint = returns.sum(dim=2) if self.config.joint_return == "sum" else team_rewards
        return magrpo_advantages(joint).unsqueeze(2).expand_as(returns)
