"""Many text episodes stepped in lockstep: G copies of one problem form a group.

Layout (E = ``num_envs``, keyed by agent like the parallel env):

- ``obs[agent]``: a list of E prompts (str);
- actions: ``{agent: a sequence of E str}``; the entries of envs that have ended are
  ignored (any value);
- ``rewards[agent]``: float32 (E,); ``terminations[agent]``, ``truncations[agent]``: bool (E,);
- ``infos``: a list of E dicts, each keyed by agent like the parallel env's infos.

``reset(seed, options)`` resets every env; options give one value per env:
``problem_index`` / ``problem_id`` and ``episode_seed``. Without ``episode_seed`` each env
draws its own, so G envs on one problem sample G different completions from a seeded
policy (:class:`agents.TextPolicy`) while the whole batch replays from ``seed``. Env e
behaves exactly like a parallel env reset with env e's problem and episode seed.

An env that ended (``stop_threshold``) ignores later actions and reports zero reward
(its infos keep its final state, with ``active`` False) until the next reset; stepping
after every env has ended is an error.

The env implements :class:`deliberation_env.vector_protocol.VectorEnv` (``episode_length``
is ``max_turns``; ``step_running`` also steps a batch whose episodes have all ended), and
:meth:`TextDeliberationVectorEnv.factory` gives the picklable builder that runs it on Ray
workers (:mod:`deliberation_env.distributed`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from deliberation_env.starts import Starts
from deliberation_env.tasks import Problem
from deliberation_env.text.config import TextEnvConfig
from deliberation_env.text.env import Spaces, TextEngine, check_text
from deliberation_env.text.protocols.base import TextProtocol
from deliberation_env.values import check_action_keys, check_agent


class TextDeliberationVectorEnv:
    """``num_envs`` text episodes in lockstep (see the module docstring).

    Args:
        num_envs: Number of episodes stepped together.
        **kwargs: The parallel env's arguments (:class:`~deliberation_env.text.config.TextEnvConfig`:
            task, protocol, n_agents, max_turns, ...).

    Example:
        >>> venv = TextDeliberationVectorEnv(3, task="arithmetic", n_agents=2)
        >>> obs, infos = venv.reset(seed=0, options={"problem_index": [4, 4, 4]})
        >>> len(obs["agent_0"]), len({info["agent_0"]["seed"] for info in infos})
        (3, 3)
        >>> obs, rewards, terms, truncs, infos = venv.step({a: ["The answer is 3."] * 3 for a in venv.agents})
        >>> rewards["agent_1"].shape, bool(terms["agent_1"].all())
        ((3,), True)
    """

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        self._engine = TextEngine(num_envs, TextEnvConfig(**kwargs))
        self.num_envs = self._engine.num_envs
        self.n_agents = self._engine.n_agents
        self.max_turns = self._engine.max_turns
        self.possible_agents = [f"agent_{i}" for i in range(self.n_agents)]
        self.agents = list(self.possible_agents)
        self._spaces = Spaces.of(self._engine)
        self._rng = np.random.default_rng()

    @classmethod
    def factory(cls, **kwargs: Any) -> Callable[[int], TextDeliberationVectorEnv]:
        """A picklable builder of this env with these arguments, called with a number of envs:
        what :class:`~deliberation_env.distributed.RayVectorEnv` builds on each worker.

        The arguments are checked here; the task's data is read only by the call.

        Raises:
            TypeError, ValueError: Naming the bad argument.
        """
        TextEnvConfig(**kwargs)
        return functools.partial(cls, **kwargs)

    @property
    def protocol(self) -> TextProtocol:
        """The collaboration protocol."""
        return self._engine.protocol

    @property
    def stop_threshold(self) -> float | None:
        """The joint reward at which an episode ends early (None: never)."""
        return self._engine.stop_threshold

    @property
    def starts(self) -> Starts:
        """The problems of the split and how ``reset`` picks each env's problem and seed."""
        return self._engine.starts

    @property
    def problems(self) -> Sequence[Problem]:
        """The problems of the split (what ``problem_index`` indexes)."""
        return self._engine.problems

    @property
    def episode_length(self) -> int:
        """Most steps of an episode: ``max_turns``."""
        return self.max_turns

    @property
    def active(self) -> np.ndarray:
        """(E,) bool: envs whose episode is still running."""
        if self._engine.states is None:
            return np.zeros(self.num_envs, dtype=bool)
        return np.array([state.active for state in self._engine.states])

    def observation_space(self, agent: str) -> spaces.Text:
        """The observation space of one agent of one env."""
        check_agent(agent, self.possible_agents)
        return self._spaces.observation

    def action_space(self, agent: str) -> spaces.Text:
        """The action space of one agent of one env (any ``str`` is accepted)."""
        check_agent(agent, self.possible_agents)
        return self._spaces.action

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env (per-env options: see the module docstring).

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options``, naming it and the
                env; every env is then exactly as before.
        """
        engine = self._engine
        indices, seeds, rng = engine.starts.draw(seed, options, self._rng, per_env=True)
        engine.reset(indices, seeds)
        self._rng = rng
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        """Play one turn in every running env.

        Raises:
            TypeError, ValueError: On a step before ``reset`` or after every episode
                ended, actions without exactly the agents or one text per env, a
                non-string text of a running env, or a protocol fault; every env is
                then exactly as before.
        """
        if self._engine.states is not None and not self.active.any():
            raise ValueError("every episode has ended: call reset() first")
        return self.step_running(actions)

    def step_running(self, actions: dict[str, Any]):
        """:meth:`step`, which also steps a batch whose episodes have all ended (each ended
        env ignores its actions and reports zero reward).

        Raises:
            TypeError, ValueError: As :meth:`step`, but for a batch that has ended.
        """
        engine = self._engine
        if engine.states is None:
            raise ValueError("no episode: call reset() before step()")
        active = self.active
        check_action_keys(actions, self.agents)
        for agent in self.agents:
            column = actions[agent]
            if isinstance(column, str) or not isinstance(column, Sequence | np.ndarray) or len(column) != self.num_envs:
                raise ValueError(f"actions[{agent!r}] must be a sequence of {self.num_envs} texts (one per env)")
        table = [
            [check_text(f"{agent} (env {e})", actions[agent][e]) for agent in self.agents] if active[e] else None
            for e in range(self.num_envs)
        ]
        engine.step(table)
        rewards = np.array([state.reward for state in engine.states], dtype=np.float32)
        ended = ~self.active
        return (
            self._observations(),
            {a: rewards.copy() for a in self.agents},
            {a: ended.copy() for a in self.agents},
            {a: np.zeros(self.num_envs, dtype=bool) for a in self.agents},
            self._infos(),
        )

    def _observations(self) -> dict[str, list[str]]:
        per_env = [self._engine.observations(e) for e in range(self.num_envs)]
        return {agent: [prompts[i] for prompts in per_env] for i, agent in enumerate(self.agents)}

    def _infos(self) -> list[dict[str, dict[str, Any]]]:
        return [self._engine.infos(e, self.agents) for e in range(self.num_envs)]

    def close(self) -> None:
        """Nothing to release."""
