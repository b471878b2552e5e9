"""The meta-action env: each round every agent chooses PERSIST, REFINE or CONCEDE and the
env runs the LLMs (the MPDF paper's setting); built by ``de.parallel_env``, ``de.env`` and
``de.vector_env`` (:mod:`deliberation_env.factory`).

See :mod:`deliberation_env.meta.env` for agents, spaces, actions, rewards and arguments
(:class:`EnvConfig`, their one home); :mod:`deliberation_env.meta.vector` for the
lockstep vector env and :mod:`deliberation_env.meta.core` for the engine both run on.
"""

from deliberation_env.meta import spaces
from deliberation_env.meta.config import EnvConfig, SimulatedTeamConfig
from deliberation_env.meta.core import RewardConfig
from deliberation_env.meta.env import DeliberationEnv
from deliberation_env.meta.spaces import PEER_FEATURES, SELF_FEATURES, MetaAction
from deliberation_env.meta.vector import DeliberationVectorEnv

__all__ = [
    "PEER_FEATURES",
    "SELF_FEATURES",
    "DeliberationEnv",
    "DeliberationVectorEnv",
    "EnvConfig",
    "MetaAction",
    "RewardConfig",
    "SimulatedTeamConfig",
    "spaces",
]
