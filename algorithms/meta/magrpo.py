"""MAGRPO (https://arxiv.org/abs/2508.04652): one joint advantage for the whole team.

The only change w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner` is
:meth:`MAGRPO.compute_advantages`: the joint return of each trajectory minus its group
mean (:func:`~algorithms.core.advantages.magrpo_advantages`), shared by every agent of the
trajectory (centralized training, decentralized execution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from algorithms.core.advantages import magrpo_advantages
from algorithms.meta.base import PolicyGradientConfig, PolicyGradientLearner


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


class MAGRPO(PolicyGradientLearner):
    """A = R_joint - mean_group(R_joint), the same for every agent of a trajectory."""

    config_class = MAGRPOConfig
    name = "magrpo"

    def compute_advantages(self, returns: torch.Tensor, team_rewards: torch.Tensor) -> torch.Tensor:
        """Mean-centred joint-return advantages, broadcast to (B, G, n_agents)."""
        joint = returns.sum(dim=2) if self.config.joint_return == "sum" else team_rewards
        return magrpo_advantages(joint).unsqueeze(2).expand_as(returns)
