"""The text-action env: teams of LLM policies collaborating in text (MAGRPO's setting).

>>> import deliberation_env as de
>>> env = de.make("text-deliberation-v1", task="arithmetic", n_agents=3)
>>> env.possible_agents
['agent_0', 'agent_1', 'agent_2']

See :mod:`deliberation_env.text.env` for agents, spaces, protocols, rewards and arguments
(:class:`TextEnvConfig`, their one home).
"""

from __future__ import annotations

from typing import Any

from deliberation_env.text.config import TextEnvConfig
from deliberation_env.text.env import TextDeliberationEnv
from deliberation_env.text.protocols import (
    BatchScoring,
    CodingProtocol,
    MathProtocol,
    Outcome,
    TextProtocol,
    WritingProtocol,
    WritingTargets,
)
from deliberation_env.text.vector import TextDeliberationVectorEnv


def text_env(**kwargs: Any) -> TextDeliberationEnv:
    """The text-action env, parallel API (arguments: :mod:`deliberation_env.text.env`)."""
    return TextDeliberationEnv(**kwargs)


def text_vector_env(num_envs: int, workers: int = 0, **kwargs: Any) -> TextDeliberationVectorEnv:
    """``num_envs`` text episodes in lockstep (:mod:`deliberation_env.text.vector`);
    ``workers=N`` runs them on N Ray workers, ``worker_options`` their Ray actor options
    (:mod:`deliberation_env.distributed`, the ``ray`` extra)."""
    if workers == 0:
        return TextDeliberationVectorEnv(num_envs, **kwargs)
    from deliberation_env.distributed import RayVectorEnv

    worker_options = kwargs.pop("worker_options", None)
    return RayVectorEnv(TextDeliberationVectorEnv.factory(**kwargs), num_envs, workers, worker_options)


__all__ = [
    "BatchScoring",
    "CodingProtocol",
    "MathProtocol",
    "Outcome",
    "TextDeliberationEnv",
    "TextDeliberationVectorEnv",
    "TextEnvConfig",
    "TextProtocol",
    "WritingProtocol",
    "WritingTargets",
    "text_env",
    "text_vector_env",
]
