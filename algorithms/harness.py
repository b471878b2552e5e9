"""Training runs and optimizer comparisons, by their older home's name.

The code lives in :mod:`algorithms.training` (one run: config, evaluation, training loop,
checkpoints) and :mod:`algorithms.comparison` (many runs: config, baselines, CSV, summary,
plots); the env's arguments in :mod:`deliberation_env.config`. This module re-exports the
names that the CLI, benchmarks, examples and tests import from it.
"""

from __future__ import annotations

from algorithms.comparison import CompareConfig, compare, mean_ci, summarize
from algorithms.training import TrainConfig, load_network, train
from deliberation_env.config import EnvConfig, SimulatedTeamConfig

__all__ = [
    "CompareConfig",
    "EnvConfig",
    "SimulatedTeamConfig",
    "TrainConfig",
    "compare",
    "load_network",
    "mean_ci",
    "summarize",
    "train",
]
