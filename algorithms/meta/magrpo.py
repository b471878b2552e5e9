"""MAGRPO (https://arxiv.org/abs/2508.04652): one joint advantage for the whole team.

The changes w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner`:
:meth:`MAGRPO.returns` credits every agent of a trajectory with the team's joint return
(the team reward, or with ``joint_return="sum"`` the sum of the agents' returns, which
pays a team for a dissenter kept wrong: :class:`~algorithms.meta.config.MAGRPOConfig`), and
:meth:`MAGRPO.compute_advantages` takes each return minus its group mean
(:func:`~algorithms.core.advantages.magrpo_advantages`), so every agent of the trajectory
gets the same advantage (centralized training, decentralized execution).
"""

from __future__ import annotations

import torch

from algorithms.core.advantages import magrpo_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.meta.base import PolicyGradientLearner, Rollout
from algorithms.meta.config import MAGRPOConfig


class MAGRPO(PolicyGradientLearner):
    """A = R_joint - mean_group(R_joint), the same for every agent of a trajectory."""

    config_class = MAGRPOConfig
    name = "magrpo"

    def returns(self, batch: Rollout) -> torch.Tensor:
        """The joint return of each trajectory, credited to every agent of it:
        R_{g,i} = T_g, the team reward (``joint_return="team"``), or sum_j R_{g,j} (``"sum"``).

        Args:
            batch: The rollout, with each agent's return (B, G, n_agents) and the team
                rewards (B, G).

        Returns:
            (B, G, n_agents), equal across the agent axis.
        """
        if self.config.joint_return == "sum":
            joint = batch.returns.sum(dim=2, keepdim=True)
        else:
            joint = batch.team_rewards.unsqueeze(2)
        return joint.expand_as(batch.returns)

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Mean-centred joint-return advantages: A_{g,i} = R_{g,i} - mean_h R_{h,i}.

        Args:
            returns: (B, G, n_agents) the joint returns of :meth:`returns`.

        Returns:
            Advantages (B, G, n_agents), equal across the agent axis when the returns are.
        """
        return per_agent_groups(magrpo_advantages, returns)
