"""The learners: one config dataclass and one small class each.

======================  ===========================  =========================================
learner                 config                       what changes
======================  ===========================  =========================================
:class:`SoftRankPO`     :class:`SoftRankPOConfig`    soft-rank normal-quantile advantages
:class:`GRPO`           :class:`GRPOConfig`          group-standardized advantages, per agent
:class:`MAGRPO`         :class:`MAGRPOConfig`        joint return minus group mean, shared
:class:`SFT`            :class:`SFTConfig`           behaviour cloning of a teacher (stage 1)
======================  ===========================  =========================================

The three policy-gradient learners share :class:`~algorithms.learners.base.PolicyGradientLearner`
and override only ``compute_advantages``.
"""

from algorithms.learners.base import (
    Learner,
    LearnerConfig,
    PolicyGradientConfig,
    PolicyGradientLearner,
)
from algorithms.learners.grpo import GRPO, GRPOConfig
from algorithms.learners.magrpo import MAGRPO, MAGRPOConfig
from algorithms.learners.sft import SFT, SFTConfig
from algorithms.learners.softrankpo import SoftRankPO, SoftRankPOConfig

LEARNERS: dict[str, type[Learner]] = {
    "softrankpo": SoftRankPO,
    "grpo": GRPO,
    "magrpo": MAGRPO,
    "sft": SFT,
}
"""Learner classes by algorithm name (as the CLI and the harness spell them)."""

__all__ = [
    "GRPO",
    "LEARNERS",
    "MAGRPO",
    "SFT",
    "GRPOConfig",
    "Learner",
    "LearnerConfig",
    "MAGRPOConfig",
    "PolicyGradientConfig",
    "PolicyGradientLearner",
    "SFTConfig",
    "SoftRankPO",
    "SoftRankPOConfig",
]
