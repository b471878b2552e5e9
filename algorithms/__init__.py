"""Learners and baselines. They use only the public API of ``deliberation_env``.

>>> from algorithms import SoftRankPO, GRPO, MAGRPO, SFT, baselines
>>> sorted(baselines.BASELINES)[:3]
['confidence-threshold', 'debate', 'independent']
"""

from algorithms import baselines
from algorithms.learners import GRPO, MAGRPO, SFT, SoftRankPO

__all__ = ["GRPO", "MAGRPO", "SFT", "SoftRankPO", "baselines"]
