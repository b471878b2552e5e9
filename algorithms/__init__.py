"""Learners of both families and the ``deliberate`` CLI. They use only the public API of
``deliberation_env``.

``algorithms.core`` is what both families share (advantages, checkpoints, metrics, compare),
``algorithms.meta`` the meta-policy learners, baselines and evaluation, ``algorithms.text``
the LLM-weight learners.

>>> from algorithms import SoftRankPO, GRPO, MAGRPO, SFT, baselines
>>> sorted(baselines.BASELINES)[:3]
['confidence-threshold', 'debate', 'independent']
"""

import sys

from algorithms.core.lazy import lazy_package
from deliberation_env.moved_modules import MovedModules

MOVED = {
    "algorithms.advantages": "algorithms.core.advantages",
    "algorithms.checkpoints": "algorithms.core.checkpoints",
    "algorithms.config_files": "algorithms.core.config_files",
    "algorithms.metrics": "algorithms.core.metrics",
    "algorithms.training": "algorithms.meta.train",
    "algorithms.comparison": "algorithms.meta.compare",
    "algorithms.harness": "algorithms.meta.compare",
    "algorithms.baselines": "algorithms.meta.baselines",
    "algorithms.compute_matched": "algorithms.meta.compute_matched",
    "algorithms.evaluate": "algorithms.meta.evaluate",
    "algorithms.learning_plots": "algorithms.meta.learning_plots",
    "algorithms.losses": "algorithms.meta.losses",
    "algorithms.network": "algorithms.meta.network",
    "algorithms.plots": "algorithms.meta.plots",
    "algorithms.policy": "algorithms.meta.policy",
    "algorithms.learners": "algorithms.meta",
    "algorithms.learners.base": "algorithms.meta.base",
    "algorithms.learners.grpo": "algorithms.meta.grpo",
    "algorithms.learners.magrpo": "algorithms.meta.magrpo",
    "algorithms.learners.sft": "algorithms.meta.sft",
    "algorithms.learners.softrankpo": "algorithms.meta.softrankpo",
    "algorithms.text_eval": "algorithms.text.eval",
}
"""Module paths of release 0.1 (old -> new): they still import, with a ``DeprecationWarning``,
until release 0.2."""

# First in line: under an old package's name (algorithms.learners) the path finder would
# otherwise load a second copy of the new package's files.
sys.meta_path.insert(0, MovedModules(MOVED, "0.2"))

__all__ = ["GRPO", "MAGRPO", "SFT", "SoftRankPO", "baselines"]

lazy_package(__name__, dict.fromkeys(__all__, "algorithms.meta"))  # imported when first used: no torch until then
