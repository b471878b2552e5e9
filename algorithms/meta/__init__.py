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
and override ``compute_advantages(returns)``, (B, G, n_agents) -> (B, G, n_agents), the
signature of both families (MAGRPO also ``returns``: every agent's is the joint return). A run of one of them is :func:`~algorithms.meta.train.train`,
a comparison of several :func:`~algorithms.meta.compare.compare`, the held-out evaluation of a
policy :func:`~algorithms.meta.evaluate.evaluate` (the text family's :func:`algorithms.text.evaluate`
has the same shape and result type); the heuristic baselines are in :mod:`algorithms.meta.baselines`.
"""

from algorithms.core.lazy import lazy_package

lazy_package(
    __name__,
    {
        "baselines": "algorithms.meta.baselines",
        "MetaLearner": "algorithms.meta.base",
        "PolicyGradientLearner": "algorithms.meta.base",
        "LearnerConfig": "algorithms.meta.config",
        "PolicyGradientConfig": "algorithms.meta.config",
        "GRPOConfig": "algorithms.meta.config",
        "MAGRPOConfig": "algorithms.meta.config",
        "SFTConfig": "algorithms.meta.config",
        "SoftRankPOConfig": "algorithms.meta.config",
        "CompareConfig": "algorithms.meta.config",
        "GRPO": "algorithms.meta.grpo",
        "MAGRPO": "algorithms.meta.magrpo",
        "SFT": "algorithms.meta.sft",
        "SoftRankPO": "algorithms.meta.softrankpo",
        "evaluate": "algorithms.meta.evaluate",
        "LEARNERS": "algorithms.meta.train",
        "load_network": "algorithms.meta.train",
        "train": "algorithms.meta.train",
    },
)  # each name is imported from its module when first used: importing the package loads no torch

__all__ = [
    "GRPO",
    "LEARNERS",
    "MAGRPO",
    "SFT",
    "CompareConfig",
    "GRPOConfig",
    "LearnerConfig",
    "MAGRPOConfig",
    "MetaLearner",
    "PolicyGradientConfig",
    "PolicyGradientLearner",
    "SFTConfig",
    "SoftRankPO",
    "SoftRankPOConfig",
    "baselines",
    "evaluate",
    "load_network",
    "train",
]
