"""Baseline meta-policies: the heuristics of the deliberation literature, and bounds.

=====================  ==============================================================
name                   rule (per agent, per round)
=====================  ==============================================================
independent            always PERSIST: independent answers, then a plurality vote
debate                 always REFINE: multi-agent debate (Du et al., 2023)
minority-concedes      CONCEDE unless my decision is the plurality: majority dynamics
confidence-threshold   PERSIST if confident; else CONCEDE if a peer disagrees, else REFINE
random                 uniform over the three actions
oracle                 privileged upper bound: reads correctness from ``infos``
=====================  ==============================================================

All act on the vector env's batched observations (see :mod:`algorithms.meta.policy`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

import deliberation_env as de
from algorithms.meta.policy import Actions, Infos, Observations

_CONF = de.SELF_FEATURES.index("confidence")
_AGREE = de.SELF_FEATURES.index("peer_agree_share")
_PLURALITY = de.SELF_FEATURES.index("is_plurality")


def constant_actions(obs: Observations, action: de.MetaAction) -> Actions:
    """``action`` for every agent of every env."""
    return {agent: np.full(len(o["self"]), int(action), dtype=np.int64) for agent, o in obs.items()}


class Independent:
    """Always PERSIST: the agents' independent answers, aggregated by plurality vote."""

    name = "independent"

    def act(self, obs: Observations, infos: Infos) -> Actions:
        return constant_actions(obs, de.MetaAction.PERSIST)


class Debate:
    """Always REFINE: every agent re-solves seeing its peers' answers, every round."""

    name = "debate"

    def act(self, obs: Observations, infos: Infos) -> Actions:
        return constant_actions(obs, de.MetaAction.REFINE)


class MinorityConcedes:
    """CONCEDE when my decision is not the plurality decision, else PERSIST."""

    name = "minority-concedes"

    def act(self, obs: Observations, infos: Infos) -> Actions:
        return {
            agent: np.where(o["self"][:, _PLURALITY] > 0.5, de.MetaAction.PERSIST, de.MetaAction.CONCEDE).astype(np.int64)
            for agent, o in obs.items()
        }


class ConfidenceThreshold:
    """PERSIST when z_conf >= ``threshold``; otherwise CONCEDE if some peer disagrees,
    else REFINE.

    Args:
        threshold: Confidence below which an agent gives up its answer.
    """

    name = "confidence-threshold"

    def __init__(self, threshold: float = 0.5) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {threshold!r}")
        self.threshold = threshold

    def act(self, obs: Observations, infos: Infos) -> Actions:
        actions = {}
        for agent, o in obs.items():
            confident = o["self"][:, _CONF] >= self.threshold
            disagreement = o["self"][:, _AGREE] < 1.0
            fallback = np.where(disagreement, de.MetaAction.CONCEDE, de.MetaAction.REFINE)
            actions[agent] = np.where(confident, de.MetaAction.PERSIST, fallback).astype(np.int64)
        return actions


class RandomPolicy:
    """Uniformly random actions (seeded).

    Args:
        seed: Seed of the policy's own RNG.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Observations, infos: Infos) -> Actions:
        return {agent: self.rng.integers(0, len(de.MetaAction), size=len(o["self"])) for agent, o in obs.items()}


def _concede_fixes(info: Mapping, agent: str, agents: list[str]) -> bool:
    """Whether CONCEDE would leave ``agent`` with a correct answer (privileged: reads ``correct``)."""
    target = info[agent]["concede_target"]
    return target is not None and info[agents[target]]["correct"]


class Oracle:
    """Privileged upper bound: reads correctness from ``infos`` (not a Dec-POMDP policy).

    Correct agents PERSIST; a wrong agent CONCEDEs if the peer CONCEDE would adopt
    (``infos[agent]["concede_target"]``, computed by the env under its own concede rule)
    is correct, else REFINEs, the only action that can still fix it.
    """

    name = "oracle"
    privileged = True

    def act(self, obs: Observations, infos: Infos) -> Actions:
        agents = list(obs)  # in agent-index order, which concede_target indexes
        actions = {}
        for agent in agents:
            correct = np.array([info[agent]["correct"] for info in infos])
            concede_fixes = np.array([_concede_fixes(info, agent, agents) for info in infos], dtype=bool)
            fallback = np.where(concede_fixes, de.MetaAction.CONCEDE, de.MetaAction.REFINE)
            actions[agent] = np.where(correct, de.MetaAction.PERSIST, fallback).astype(np.int64)
        return actions


BASELINES: Mapping[str, type] = {
    cls.name: cls for cls in (Independent, Debate, MinorityConcedes, ConfidenceThreshold, RandomPolicy, Oracle)
}
"""Baseline classes by name."""


def get(name: str, **kwargs) -> object:
    """A baseline policy by name (see the module table)."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; baselines: {', '.join(BASELINES)}")
    return BASELINES[name](**kwargs)
