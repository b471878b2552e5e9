"""deliberation-env: teams of LLM agents deliberating, as a PettingZoo Dec-POMDP.

>>> import deliberation_env as de
>>> env = de.make("deliberation-v0", task="arithmetic", team="simulated")
>>> sorted(env.possible_agents)
['agent_0', 'agent_1', 'agent_2']
"""

from __future__ import annotations

import sys
from typing import Any

from pettingzoo.utils import parallel_to_aec
from pettingzoo.utils.env import AECEnv

from deliberation_env import tasks
from deliberation_env._moved import MovedModules
from deliberation_env.meta import (
    PEER_FEATURES,
    SELF_FEATURES,
    DeliberationEnv,
    DeliberationVectorEnv,
    EnvConfig,
    MetaAction,
    RewardConfig,
    spaces,
)
from deliberation_env.text import (
    TextDeliberationEnv,
    TextDeliberationVectorEnv,
    TextEnvConfig,
    text_env,
    text_vector_env,
)

__version__ = "0.1.0"

MOVED = {
    "deliberation_env.config": "deliberation_env.meta.config",
    "deliberation_env.core": "deliberation_env.meta.core",
    "deliberation_env.spaces": "deliberation_env.meta.spaces",
    "deliberation_env.vector": "deliberation_env.meta.vector",
}
"""Modules of 0.1 that moved into ``meta/``, importable under their old names until 0.3.
``deliberation_env.env`` (now ``deliberation_env.meta.env``) has no alias: importing a
module of that name would rebind ``de.env``, the AEC constructor."""
sys.meta_path.append(MovedModules(MOVED, removal="0.3"))


def parallel_env(**kwargs: Any) -> DeliberationEnv:
    """The deliberation env, parallel API (arguments: :mod:`deliberation_env.meta.env`)."""
    return DeliberationEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The deliberation env, AEC API (PettingZoo's conversion of the parallel env)."""
    return parallel_to_aec(DeliberationEnv(**kwargs))


def vector_env(num_envs: int, workers: int = 0, **kwargs: Any) -> DeliberationVectorEnv:
    """``num_envs`` episodes in lockstep, one backend call per phase (:mod:`deliberation_env.meta.vector`);
    ``workers=N`` runs them on N Ray workers, ``worker_options`` their Ray actor options
    (:mod:`deliberation_env.distributed`, the ``ray`` extra)."""
    if workers == 0:
        return DeliberationVectorEnv(num_envs, **kwargs)
    from deliberation_env.distributed import RayVectorEnv

    return RayVectorEnv("meta", num_envs, workers, **kwargs)


_REGISTRY = {"deliberation-v0": parallel_env, "text-deliberation-v0": text_env}


def make(env_id: str, **kwargs: Any) -> DeliberationEnv | TextDeliberationEnv:
    """Build a registered env by versioned id, e.g. ``make("deliberation-v0", team="simulated")``."""
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown env id {env_id!r}; registered: {', '.join(_REGISTRY)}")
    return _REGISTRY[env_id](**kwargs)


__all__ = [
    "PEER_FEATURES",
    "SELF_FEATURES",
    "DeliberationEnv",
    "DeliberationVectorEnv",
    "EnvConfig",
    "MetaAction",
    "RewardConfig",
    "TextDeliberationEnv",
    "TextDeliberationVectorEnv",
    "TextEnvConfig",
    "env",
    "make",
    "parallel_env",
    "spaces",
    "tasks",
    "text_env",
    "text_vector_env",
    "vector_env",
]
