"""The policy protocol: batched meta-actions from batched observations.

A policy acts on the vector env's layout (see :mod:`deliberation_env.meta.vector`): ``obs``
maps each agent to a dict of arrays with leading size ``num_envs``, and ``infos`` is the
list of per-env info dicts. It returns one integer :class:`deliberation_env.MetaAction`
array of shape ``(num_envs,)`` per agent. Only privileged policies (the oracle) read
``infos``; everything else acts on observations alone, as a Dec-POMDP requires.
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
