"""Envs built from arguments, a registered id or a config, for either family: the one
place that turns configs into envs. ``de.parallel_env``, ``de.env`` and ``de.vector_env``
(the meta-action family) are defined here; ``de.text_env`` and ``de.text_vector_env`` in
:mod:`deliberation_env.text`, whose face they are.

Configs are data and checks (:class:`~deliberation_env.meta.config.EnvConfig`,
:class:`~deliberation_env.text.config.TextEnvConfig`, the ``env`` part of a text learner's
config); a caller that holds one builds its vector env here:

>>> import deliberation_env as de
>>> config = de.EnvConfig(task="arithmetic", team="simulated", max_rounds=2)
>>> de.vector_env_from(config, 4, split="test").num_envs
4
>>> de.vector_env_from(de.TextEnvConfig(task="arithmetic"), 2).agents
['agent_0', 'agent_1']
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pettingzoo.utils import parallel_to_aec
from pettingzoo.utils.env import AECEnv

from deliberation_env.meta import DeliberationEnv, DeliberationVectorEnv, EnvConfig
from deliberation_env.text import TextDeliberationEnv, TextEnvConfig, text_env, text_vector_env
from deliberation_env.values import is_integer


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

    worker_options = kwargs.pop("worker_options", None)
    return RayVectorEnv(DeliberationVectorEnv.factory(**kwargs), num_envs, workers, worker_options)


REGISTRY = {"deliberation-v1": parallel_env, "text-deliberation-v1": text_env}
"""Versioned env ids and the functions that build them (a change of behaviour bumps the version;
each env card's version history says what changed)."""


def make(env_id: str, **kwargs: Any) -> DeliberationEnv | TextDeliberationEnv:
    """Build a registered env by versioned id, e.g. ``make("deliberation-v1", team="simulated")``.

    Raises:
        ValueError: When ``env_id`` is not registered; an earlier version of a registered
            env is named as such, with the id that replaced it.
    """
    if env_id not in REGISTRY:
        raise ValueError(_unknown_id_message(env_id))
    return REGISTRY[env_id](**kwargs)


def _unknown_id_message(env_id: str) -> str:
    """Why ``env_id`` is refused: an earlier version of a registered env, or no env at all."""
    name, _, version = env_id.rpartition("-v")
    current = next((key for key in REGISTRY if key.rpartition("-v")[0] == name), None)
    if current is not None and version.isdigit() and int(version) < int(current.rpartition("-v")[2]):
        return (
            f"env id {env_id!r} is an earlier version of {current!r}, no longer built: "
            f"use de.make({current!r}, ...) (the env card's version history says what changed)"
        )
    return f"unknown env id {env_id!r}; registered: {', '.join(REGISTRY)}"


def vector_env_from(config: EnvConfig | TextEnvConfig, num_envs: int, **overrides: Any) -> Any:
    """A vector env of ``num_envs`` envs with ``config``'s arguments and ``overrides`` (e.g.
    ``split="test"``): ``de.vector_env`` for an :class:`EnvConfig` (on its ``workers`` Ray
    workers if that is > 0, at most one per env), ``de.text_vector_env`` for a
    :class:`TextEnvConfig` (a text learner config's ``env``).

    Raises:
        TypeError: When ``config`` is neither (a learner config: the error says to pass its ``env``).
    """
    if isinstance(config, EnvConfig):
        config = dataclasses.replace(config, **overrides)
        workers = min(config.workers, num_envs) if is_integer(num_envs) else config.workers
        return vector_env(num_envs, **dataclasses.replace(config, workers=workers).kwargs())
    if isinstance(config, TextEnvConfig):
        return text_vector_env(num_envs, **{**config.env_kwargs(), **overrides})
    hint = " (a learner config: pass its .env)" if isinstance(getattr(config, "env", None), TextEnvConfig) else ""
    raise TypeError(f"config must be an EnvConfig or a TextEnvConfig, got {type(config).__name__}{hint}")
