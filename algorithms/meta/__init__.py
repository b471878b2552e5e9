"""The meta-policy family: learners of the meta-action env, one config dataclass and one small class each.

======================  ===========================  =========================================
learner                 config                       what changes
======================  ===========================  =========================================
:class:`SoftRankPO`     :class:`SoftRankPOConfig`    soft-rank normal-quantile advantages
:class:`GRPO`           :class:`GRPOConfig`          group-standardized advantages, per agent
:class:`MAGRPO`         :class:`MAGRPOConfig`        joint return minus group mean, shared
:class:`SFT`            :class:`SFTConfig`           behaviour cloning of a teacher (stage 1)
======================  ===========================  =========================================

The three policy-gradient learners share :class:`~algorithms.meta.base.PolicyGradientLearner`
and override only ``compute_advantages``. A run of one of them is :func:`~algorithms.meta.train.train`,
a comparison of several :func:`~algorithms.meta.compare.compare`; the heuristic baselines are in
:mod:`algorithms.meta.baselines`.
"""

from algorithms.meta import baselines
from algorithms.meta.base import (
    Learner,
    LearnerConfig,
    PolicyGradientConfig,
    PolicyGradientLearner,
)
from algorithms.meta.grpo import GRPO, GRPOConfig
from algorithms.meta.magrpo import MAGRPO, MAGRPOConfig
from algorithms.meta.sft import SFT, SFTConfig
from algorithms.meta.softrankpo import SoftRankPO, SoftRankPOConfig
from algorithms.meta.train import LEARNERS, TrainConfig, load_network, train

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
    "TrainConfig",
    "baselines",
    "load_network",
    "train",
]
