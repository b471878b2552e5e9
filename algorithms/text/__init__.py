"""Learners that train the LLMs themselves, on the text-action env (``de.text_vector_env``).

=========================  ============================  ===========================================
learner                    config                        advantage (the one method it overrides)
=========================  ============================  ===========================================
:class:`TextMAGRPO`        :class:`TextMAGRPOConfig`     joint return minus the group baseline
                                                         (mean / rloo / max / raw), REINFORCE, one pass
:class:`TextGRPO`          :class:`TextGRPOConfig`       per agent, group-standardized; clipped ratio
:class:`TextSoftRankPO`    :class:`TextSoftRankPOConfig` per agent, soft-rank normal quantiles; KL
=========================  ============================  ===========================================

They share :class:`~algorithms.text.base.TextPolicyGradientLearner` (collect groups,
advantages, loss, update) and the advantage functions of :mod:`algorithms.advantages`
with the meta-policy learners. The policy is an :class:`agents.TrainableLM` (one LoRA
adapter per agent on one base, separate models, or full fine-tuning); frozen agents are
:class:`agents.TextPolicy` objects. :func:`train` builds everything from a config.
"""

from algorithms.text.base import TextPolicyGradientLearner
from algorithms.text.config import (
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPOConfig,
    TextSoftRankPOConfig,
)
from algorithms.text.learners import TEXT_LEARNERS, TextGRPO, TextMAGRPO, TextSoftRankPO
from algorithms.text.train import TrainResult, train

TEXT_CONFIGS: dict[str, type[TextLearnerConfig]] = {name: cls.config_class for name, cls in TEXT_LEARNERS.items()}
"""The config class of each learner name (what the CLI parses for ``--algo NAME``)."""

__all__ = [
    "TEXT_CONFIGS",
    "TEXT_LEARNERS",
    "TextGRPO",
    "TextGRPOConfig",
    "TextLearnerConfig",
    "TextMAGRPO",
    "TextMAGRPOConfig",
    "TextPolicyGradientLearner",
    "TextSoftRankPO",
    "TextSoftRankPOConfig",
    "TrainResult",
    "train",
]
