"""The text-action env: teams of LLM policies collaborating in text (MAGRPO's setting).

>>> from deliberation_env.text import make, text_env
>>> env = make(ENV_ID, task="arithmetic", n_agents=3)
>>> env.possible_agents
['agent_0', 'agent_1', 'agent_2']

See :mod:`deliberation_env.text.env` for agents, spaces, protocols, rewards and arguments.
"""

from __future__ import annotations

from typing import Any

from deliberation_env.text.env import TextDeliberationEnv
from deliberation_env.text.protocols import (
    MathProtocol,
    Outcome,
    TextProtocol,
    WritingProtocol,
    WritingTargets,
)
from deliberation_env.text.vector import TextDeliberationVectorEnv

ENV_ID = "text-deliberation-v0"
"""The versioned registry id of the text-action env."""


def text_env(**kwargs: Any) -> TextDeliberationEnv:
    """The text-action env, parallel API (arguments: :mod:`deliberation_env.text.env`)."""
    return TextDeliberationEnv(**kwargs)


def text_vector_env(num_envs: int, **kwargs: Any) -> TextDeliberationVectorEnv:
    """``num_envs`` text episodes in lockstep (:mod:`deliberation_env.text.vector`)."""
    return TextDeliberationVectorEnv(num_envs, **kwargs)


REGISTRY = {ENV_ID: text_env}
"""Versioned ids of the text-action envs, for ``deliberation_env.make``."""


def make(env_id: str, **kwargs: Any) -> TextDeliberationEnv:
    """Build a registered text env by versioned id."""
    if env_id not in REGISTRY:
        raise ValueError(f"unknown env id {env_id!r}; registered: {', '.join(REGISTRY)}")
    return REGISTRY[env_id](**kwargs)


__all__ = [
    "ENV_ID",
    "REGISTRY",
    "MathProtocol",
    "Outcome",
    "TextDeliberationEnv",
    "TextDeliberationVectorEnv",
    "TextProtocol",
    "WritingProtocol",
    "WritingTargets",
    "make",
    "text_env",
    "text_vector_env",
]
