"""The vector-env protocol: what every vector env of the package offers, whatever its family.

Both families implement it: the meta-action env
(:class:`~deliberation_env.meta.vector.DeliberationVectorEnv`, actions are ints) and the
text-action env (:class:`~deliberation_env.text.vector.TextDeliberationVectorEnv`, actions
are texts); so does the Ray env that runs either on workers
(:class:`~deliberation_env.distributed.RayVectorEnv`), which needs nothing else of the
in-process env it runs. A learner, an evaluation or a user's loop written against it runs
on all three.

Layout (E = ``num_envs``, keyed by agent like the parallel envs):

- ``reset(seed, options) -> (obs, infos)``; options may give one value per env
  (``problem_index`` / ``problem_id``, ``episode_seed``: :mod:`deliberation_env.starts`);
- ``step(actions) -> (obs, rewards, terminations, truncations, infos)``: ``actions[agent]``
  holds one action per env; ``rewards[agent]`` is float32 (E,), ``terminations[agent]``
  and ``truncations[agent]`` bool (E,), ``infos`` a list of E per-agent dicts.

Envs run in lockstep. An env whose episode ended (``active`` False) ignores its actions
and reports zero reward, terminated, until the next reset; ``step`` refuses once every env
has ended, ``step_running`` goes on (what a Ray worker does when its slice has ended while
other slices still run). An episode lasts at most ``episode_length`` steps.

>>> import deliberation_env as de
>>> from deliberation_env.vector_protocol import VectorEnv
>>> venvs = [de.vector_env(2, team="simulated"), de.text_vector_env(2, task="arithmetic")]
>>> all(isinstance(venv, VectorEnv) for venv in venvs)
True
>>> [venv.episode_length for venv in venvs]
[3, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces

from deliberation_env.starts import Starts
from deliberation_env.tasks import Problem

Observations = dict[str, Any]
"""``{agent: the observations of the E envs}`` (arrays or lists, by family)."""
Infos = list[dict[str, dict[str, Any]]]
"""One dict per env, keyed by agent like the parallel env's infos."""
StepResult = tuple[Observations, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray], Infos]
"""``(obs, rewards, terminations, truncations, infos)`` of one step of every env."""


@runtime_checkable
class VectorEnv(Protocol):
    """``num_envs`` episodes stepped in lockstep (see the module docstring)."""

    num_envs: int
    """Number of episodes stepped together (E)."""
    n_agents: int
    """Agents per env."""
    possible_agents: list[str]
    """``agent_0 ... agent_{n-1}``."""
    agents: list[str]
    """The agents that act at every step (all of them: an ended env ignores its actions)."""

    @property
    def starts(self) -> Starts:
        """The problems of the split and how ``reset`` picks an env's problem and episode seed."""
        ...

    @property
    def problems(self) -> Sequence[Problem]:
        """The problems of the split (what ``problem_index`` indexes): ``starts.problems``."""
        ...

    @property
    def active(self) -> np.ndarray:
        """(E,) bool: envs whose episode is still running (all False before the first reset)."""
        ...

    @property
    def episode_length(self) -> int:
        """Most steps of an episode (the meta-action env's ``max_rounds``, the text env's ``max_turns``)."""
        ...

    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of one agent of one env."""
        ...

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of one agent of one env."""
        ...

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observations, Infos]:
        """Reset every env; a reset that raises changes nothing."""
        ...

    def step(self, actions: dict[str, Any]) -> StepResult:
        """One step of every running env: :meth:`step_running`, refused before ``reset`` and
        once every episode has ended; a step that raises changes nothing."""
        ...

    def step_running(self, actions: dict[str, Any]) -> StepResult:
        """One step of the envs still running; the ended ones (possibly all) ignore their
        actions and report zero reward, terminated. Refused before ``reset``."""
        ...

    def close(self) -> None:
        """Release what the env holds."""
        ...
