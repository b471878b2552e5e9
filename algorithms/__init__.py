"""Learners of both families and the ``deliberate`` CLI. They use only the public API of
``deliberation_env``.

``algorithms.core`` is what both families share (advantages, checkpoints, metrics, compare),
``algorithms.meta`` the meta-policy learners, baselines and evaluation, ``algorithms.text``
the LLM-weight learners.

>>> from algorithms import SoftRankPO, GRPO, MAGRPO, SFT, baselines
>>> sorted(baselines.BASELINES)[:3]
['confidence-threshold', 'debate', 'independent']
"""

from algorithms.core.lazy import lazy_package

__all__ = ["GRPO", "MAGRPO", "SFT", "SoftRankPO", "baselines"]

lazy_package(__name__, dict.fromkeys(__all__, "algorithms.meta"))  # imported when first used: no torch until then
