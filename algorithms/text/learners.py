"""TextMAGRPO, TextGRPO and TextSoftRankPO: the shared loop plus one method each.

The only change w.r.t. :class:`~algorithms.text.base.TextPolicyGradientLearner` is
``compute_advantages``, built on the functions of :mod:`algorithms.core.advantages` that the
meta-policy learners use, so the optimizers compare on equal terms.
"""

from __future__ import annotations

from functools import partial

import torch

from algorithms.core.advantages import grpo_advantages, softrank_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.text.base import TextPolicyGradientLearner
from algorithms.text.config import TextGRPOConfig, TextMAGRPOConfig, TextSoftRankPOConfig
from algorithms.text.losses import baseline_advantages


class TextMAGRPO(TextPolicyGradientLearner):
    """MAGRPO (Liu et al. 2025, https://arxiv.org/abs/2508.04652) on the agents' weights.

    Every agent's completion in joint rollout g is credited with the joint return R_g,
    A_g = R_g - mean_group(R) (or CoMLRL's rloo / max / raw baseline). One pass of one
    step per batch with pi_old = sg(pi): the clipped surrogate then has exactly the
    REINFORCE gradient -A_g grad log pi(o_{i,t}), the paper's update; no KL by default.
    ``normalize_advantages`` standardizes A within the group, as CoMLRL's default does.
    """

    config_class = TextMAGRPOConfig
    name = "magrpo"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Each agent's joint return minus the group baseline (aligned: equal for all agents)."""
        advantages = partial(
            baseline_advantages, baseline=self.config.baseline, normalize=self.config.normalize_advantages
        )
        return per_agent_groups(advantages, returns)


class TextGRPO(TextPolicyGradientLearner):
    """GRPO (DeepSeekMath, https://arxiv.org/abs/2402.03300) per agent: A = (R - mean) / (std + eps).

    With one trainable agent (and frozen peers, or a one-agent protocol) it is plain GRPO.
    """

    config_class = TextGRPOConfig
    name = "grpo"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Group-standardized advantages of each agent's return."""
        return per_agent_groups(partial(grpo_advantages, eps=self.config.eps, scale=self.config.scale_rewards), returns)


class TextSoftRankPO(TextPolicyGradientLearner):
    """SoftRankPO (MPDF, https://arxiv.org/abs/2509.03817) per agent: A = Phi^{-1}(soft rank / G)."""

    config_class = TextSoftRankPOConfig
    name = "softrankpo"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """Rank-quantile advantages of each agent's return."""
        return per_agent_groups(partial(softrank_advantages, tau=self.config.tau), returns)


TEXT_LEARNERS: dict[str, type[TextPolicyGradientLearner]] = {
    "magrpo": TextMAGRPO,
    "grpo": TextGRPO,
    "softrankpo": TextSoftRankPO,
}
"""The LLM-weight learners by algorithm name (as ``deliberate train text NAME`` spells them)."""
