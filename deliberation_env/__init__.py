"""deliberation-env: teams of LLM agents deliberating, as a PettingZoo Dec-POMDP.

>>> import deliberation_env as de
>>> env = de.make("deliberation-v0", task="arithmetic", team="simulated")
>>> sorted(env.possible_agents)
['agent_0', 'agent_1', 'agent_2']
"""

from __future__ import annotations

import sys

from deliberation_env import tasks
from deliberation_env.factory import env, make, parallel_env, vector_env, vector_env_from
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
from deliberation_env.moved_modules import MovedModules
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
"""Modules of 0.1 that moved into ``meta/``, importable under their old names until 0.2.
``deliberation_env.env`` (now ``deliberation_env.meta.env``) has no alias: importing a
module of that name would rebind ``de.env``, the AEC constructor."""
# first in line, as algorithms' table: an old name must never reach the path finder
sys.meta_path.insert(0, MovedModules(MOVED, removal="0.2"))


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
    "vector_env_from",
]
