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
from collections.abc import Callable
from typing import Any

from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.env import AECEnv
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from deliberation_env.meta import DeliberationEnv, DeliberationVectorEnv, EnvConfig
from deliberation_env.meta.env import check_action
from deliberation_env.text import TextDeliberationEnv, TextEnvConfig, text_env, text_vector_env
from deliberation_env.values import is_integer


def parallel_env(**kwargs: Any) -> DeliberationEnv:
    """The deliberation env, parallel API (arguments: :mod:`deliberation_env.meta.env`)."""
    return DeliberationEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The deliberation env, AEC API (PettingZoo's conversion of the parallel env, which
    refuses a bad action at the ``step`` of the agent that gives it: :class:`CheckedAECEnv`)."""
    return OrderEnforcingWrapper(CheckedAECEnv(DeliberationEnv(**kwargs), check_action))


class CheckedAECEnv(parallel_to_aec_wrapper):
    """PettingZoo's ``parallel_to_aec`` conversion that checks each action when it is stepped.

    The plain conversion buffers a cycle's actions and hands them to the parallel env at the
    last agent's ``step``, so a bad action of an earlier agent raised there: one or more
    steps late, blaming the wrong agent, and with the bad action stuck in the buffer.

    Args:
        parallel_env: The env to convert.
        check_action: ``check_action(agent, action)`` raises ``TypeError`` or ``ValueError``
            on an action that the parallel env's ``step`` would refuse.
    """

    def __init__(self, parallel_env: ParallelEnv, check_action: Callable[[str, Any], Any]) -> None:
        super().__init__(parallel_env)
        self._check_action = check_action

    def step(self, action: Any) -> None:
        """Buffer the selected agent's action, and play the cycle after its last agent's.

        Raises:
            ValueError: When ``action`` is not a valid action of the selected agent (naming the
                agent, the action and its action space), or is not None for an agent that is
                terminated or truncated. The env is then unchanged: the agent may step again.
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"{agent} is terminated or truncated: its action must be None, got {action!r}")
        else:
            try:
                self._check_action(agent, action)
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"{agent} stepped {action!r:.80}, not an action of its action space "
                    f"{self.action_space(agent)} ({error}); nothing changed: step {agent} again "
                    "with a valid action, or reset"
                ) from error
        super().step(action)


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
