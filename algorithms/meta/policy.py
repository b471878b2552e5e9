"""The policy protocol: batched meta-actions from batched observations.

A policy acts on the vector env's layout (see :mod:`deliberation_env.meta.vector`): ``obs``
maps each agent to a dict of arrays with leading size ``num_envs``, and ``infos`` is the
list of per-env info dicts. It returns one integer :class:`deliberation_env.MetaAction`
array of shape ``(num_envs,)`` per agent. Only privileged policies (the oracle, ``privileged = True``)
read the ground truth in ``infos``; the held-out evaluation gives every other policy its
infos without it (:func:`without_ground_truth`), so a user's policy that read
``correct`` cannot score as the oracle does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

Observations = Mapping[str, Mapping[str, np.ndarray]]
Infos = Sequence[Mapping[str, Mapping[str, Any]]]
Actions = dict[str, np.ndarray]


@runtime_checkable
class Policy(Protocol):
    """Anything with a ``name`` and an ``act`` method is a policy."""

    name: str

    def act(self, obs: Observations, infos: Infos) -> Actions:
        """Meta-actions for every agent of every env."""
        ...


GROUND_TRUTH_INFOS = frozenset({"correct", "consensus_correct", "reward_components", "team_reward"})
"""The info keys that tell the truth: correctness and what is paid for it."""


def is_privileged(policy: Any) -> bool:
    """Whether ``policy`` may read the ground truth (its ``privileged`` attribute, the oracle's)."""
    return getattr(policy, "privileged", False) is True


def without_ground_truth(infos: Infos) -> list[dict[str, dict[str, Any]]]:
    """``infos`` without :data:`GROUND_TRUTH_INFOS` (nor their flattened parts,
    ``reward_components/local`` of ``infos="numeric"``), what a Dec-POMDP policy may read."""
    return [
        {
            agent: {k: v for k, v in info.items() if k.split("/")[0] not in GROUND_TRUTH_INFOS}
            for agent, info in env_infos.items()
        }
        for env_infos in infos
    ]
