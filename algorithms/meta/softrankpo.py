"""SoftRankPO (MPDF, https://arxiv.org/abs/2509.03817): rank-based, scale-free advantages.

The only change w.r.t. :class:`~algorithms.meta.base.PolicyGradientLearner` is
:meth:`SoftRankPO.compute_advantages`: each agent's return is replaced by the smooth
normal quantile of its rank within the group (:func:`~algorithms.core.advantages.softrank_advantages`),
so the update does not depend on the reward scale.
"""

from __future__ import annotations

from functools import partial

import torch

from algorithms.core.advantages import softrank_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.meta.base import PolicyGradientLearner
from algorithms.meta.config import SoftRankPOConfig


class SoftRankPO(PolicyGradientLearner):
    """Per agent: A = Phi^{-1}(soft rank of R_i within its group / G)."""

    config_class = SoftRankPOConfig
    name = "softrankpo"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Soft-rank advantages of each agent's return within its group:
        A_{g,i} = Phi^{-1}(s_{g,i} / G), s_{g,i} = 1/2 + sum_{h != g} sigmoid((z_{g,i} - z_{h,i}) / tau),
        z the group-standardized returns.

        Args:
            returns: (B, G, n_agents) each agent's episode return.

        Returns:
            Advantages (B, G, n_agents), the same for any positive scale of ``returns``.
        """
        return per_agent_groups(partial(softrank_advantages, tau=self.config.tau), returns)
