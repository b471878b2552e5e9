"""deliberation-env: teams of LLM agents deliberating, as a PettingZoo Dec-POMDP.

>>> import deliberation_env as de
>>> env = de.make("deliberation-v1", task="arithmetic", team="simulated")
>>> sorted(env.possible_agents)
['agent_0', 'agent_1', 'agent_2']
"""

from __future__ import annotations

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
from deliberation_env.text import (
    TextDeliberationEnv,
    TextDeliberationVectorEnv,
    TextEnvConfig,
    text_env,
    text_vector_env,
)

__version__ = "0.2.0"

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
