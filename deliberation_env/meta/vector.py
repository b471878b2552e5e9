"""Many deliberation episodes stepped in lockstep, with one backend call per phase.

Layout (E = ``num_envs``, n agents, keyed by agent like the parallel env):

- ``obs[agent]``: ``{"self": float32 (E, 12), "peers": float32 (E, n-1, 11)}`` (plus
  ``"text"``: a list of E strings, with ``observation="text"`` or ``"both"``); with
  ``observation="flat"``, one float32 array (E, 12 + 11 (n-1)) (the parallel env's layout);
- ``rewards[agent]``: float32 (E,); ``terminations[agent]``, ``truncations[agent]``: bool (E,);
- ``infos``: a list of E dicts, each keyed by agent like the parallel env's infos;
- actions: ``{agent: int array (E,)}``.

Every env of a batch plays the same round at the same time. An env that ended early
(``stop_on_consensus``) ignores later actions and reports zero reward (its infos keep
its final state) until the next reset; stepping after every env has ended is an error.

``reset(seed, options)`` resets every env; options give one value per env:
``problem_index`` / ``problem_id`` and ``episode_seed``. Envs with equal problem and
episode seed share round 0 exactly (common random numbers), which is how a group
learner puts G rollouts of one problem in one batch.

The env implements :class:`deliberation_env.vector_protocol.VectorEnv` (``episode_length``
is ``max_rounds``; ``step_running`` also steps a batch whose episodes have all ended), and
:meth:`DeliberationVectorEnv.factory` gives the picklable builder that runs it on Ray
workers (:mod:`deliberation_env.distributed`).

``reset`` and ``step`` are atomic for the whole batch, as in the parallel env: a call
that raises (bad input, a solver or backend fault in any phase, an invalid solver
result) leaves every env, and the RNG, exactly as they were. ``infos[e][agent]`` holds
the same keys as the parallel env's, ``concede_target`` included; with
``infos="numeric"``, the parallel env's numbers-only infos.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from deliberation_env.meta import spaces as de_spaces
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.env import (
    all_infos,
    build_core,
    check_infos,
    encode_infos,
    flat_observations,
)
from deliberation_env.starts import Starts
from deliberation_env.values import check_action_keys, check_agent


class DeliberationVectorEnv:
    """``num_envs`` deliberation episodes in lockstep (see the module docstring).

    Args:
        num_envs: Number of episodes stepped together.
        infos: ``"rich"`` or ``"numeric"``, as in the parallel env.
        **kwargs: The parallel env's arguments (task, team, n_agents, max_rounds, observation, ...).

    Example:
        >>> import numpy as np, deliberation_env as de
        >>> venv = de.vector_env(4, task="arithmetic", team="simulated", max_rounds=2)
        >>> obs, infos = venv.reset(seed=0)
        >>> obs["agent_1"]["self"].shape
        (4, 12)
        >>> actions = {a: np.zeros(4, dtype=int) for a in venv.agents}
        >>> obs, rewards, terms, truncs, infos = venv.step(actions)
        >>> rewards["agent_0"].shape, len(infos)
        ((4,), 4)
    """

    def __init__(self, num_envs: int, infos: str = "rich", **kwargs: Any) -> None:
        self.info_mode = check_infos(infos)
        self._core = build_core(num_envs, **kwargs)
        self.num_envs = self._core.num_envs
        self.n_agents = self._core.n_agents
        self.max_rounds = self._core.max_rounds
        self.possible_agents = [f"agent_{i}" for i in range(self.n_agents)]
        self.agents = list(self.possible_agents)
        self._observation_space = de_spaces.observation_space(self.n_agents, self._core.observation)
        self._action_space = de_spaces.action_space()
        self._rng = np.random.default_rng()

    @classmethod
    def factory(cls, infos: str = "rich", **kwargs: Any) -> Callable[[int], DeliberationVectorEnv]:
        """A picklable builder of this env with these arguments, called with a number of envs:
        what :class:`~deliberation_env.distributed.RayVectorEnv` builds on each worker.

        The arguments are checked here; the task and the team are built only by the call.

        Raises:
            TypeError, ValueError: Naming the bad argument.
        """
        check_infos(infos)
        EnvConfig(**kwargs)
        return functools.partial(cls, infos=infos, **kwargs)

    @property
    def task(self):
        """The task the envs deliberate on."""
        return self._core.task

    @property
    def starts(self) -> Starts:
        """The problems of the split and how ``reset`` picks each env's problem and seed."""
        return self._core.starts

    @property
    def problems(self):
        """The problems of the split (what ``problem_index`` indexes)."""
        return self._core.problems

    @property
    def episode_length(self) -> int:
        """Most steps of an episode: ``max_rounds``."""
        return self.max_rounds

    @property
    def active(self) -> np.ndarray:
        """(E,) bool: envs whose episode is still running."""
        if not self._core.started:
            return np.zeros(self.num_envs, dtype=bool)
        return self._core.episode.active.copy()

    def observation_space(self, agent: str) -> spaces.Dict | spaces.Box:
        """The observation space of one agent of one env."""
        check_agent(agent, self.possible_agents)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """The action space of one agent of one env: Discrete(3)."""
        check_agent(agent, self.possible_agents)
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env (see the module docstring for per-env options).

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options`` (the message names the
                argument, the env and the valid range), or invalid solver results. Every
                env is then exactly as before the call.
        """
        core = self._core
        indices, seeds, rng = core.starts.draw(seed, options, self._rng, per_env=True)
        core.reset(indices, seeds)
        self._rng = rng  # only now: a reset that raised consumed nothing
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        """Play one round in every running env.

        Raises:
            TypeError, ValueError: On bad actions, a step before ``reset`` or after every
                episode ended, or invalid solver results; any error of a solver call
                propagates. In every case every env is exactly as before the call.
        """
        if self._core.started and not self._core.episode.active.any():
            raise ValueError("every episode has ended: call reset() first")
        return self.step_running(actions)

    def step_running(self, actions: dict[str, Any]):
        """:meth:`step`, which also steps a batch whose episodes have all ended (each ended
        env ignores its actions and reports zero reward; its per-step infos are zeroed).

        Raises:
            TypeError, ValueError: As :meth:`step`, but for a batch that has ended.
        """
        core = self._core
        if not core.started:
            raise ValueError("no episode: call reset() before step()")
        check_action_keys(actions, self.agents)
        table = np.empty((self.num_envs, self.n_agents), dtype=np.int64)
        for i, agent in enumerate(self.agents):
            column = np.asarray(actions[agent])
            if column.shape != (self.num_envs,):
                raise ValueError(f"actions[{agent!r}] must have shape ({self.num_envs},), got {column.shape}")
            if not np.issubdtype(column.dtype, np.integer) or column.dtype == bool:
                raise TypeError(f"actions[{agent!r}] must be an integer array, got dtype {column.dtype}")
            if column.min() < 0 or column.max() >= len(de_spaces.MetaAction):
                raise ValueError(f"actions[{agent!r}] must lie in 0..{len(de_spaces.MetaAction) - 1}, got {column}")
            table[:, i] = column
        rewards = core.step(table).astype(np.float32)
        ended = core.episode.just_ended | ~core.episode.active
        return (
            self._observations(),
            {a: rewards[:, i] for i, a in enumerate(self.agents)},
            {a: ended.copy() for a in self.agents},
            {a: np.zeros(self.num_envs, dtype=bool) for a in self.agents},
            self._infos(),
        )

    def _observations(self) -> dict[str, Any]:
        core = self._core
        if core.observation == "flat":
            flat = flat_observations(core)
            return {agent: flat[:, i] for i, agent in enumerate(self.agents)}
        obs: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        if core.observation in ("vector", "both"):
            self_obs, peer_obs = core.observations()
            for i, agent in enumerate(self.agents):
                obs[agent]["self"] = self_obs[:, i]
                obs[agent]["peers"] = peer_obs[:, i]
        if core.observation in ("text", "both"):
            for i, agent in enumerate(self.agents):
                obs[agent]["text"] = [core.text_observation(e, i) for e in range(self.num_envs)]
        return obs

    def _infos(self) -> list[dict[str, dict[str, Any]]]:
        return encode_infos(all_infos(self._core, self.agents), self.info_mode)

    def state(self) -> np.ndarray:
        """(E, n * 12): every agent's ``self`` row per env, for centralized critics."""
        if not self._core.started:
            raise ValueError("state() needs episodes: call reset() first")
        return self._core.observations()[0].reshape(self.num_envs, -1)

    def close(self) -> None:
        """Nothing to release."""
