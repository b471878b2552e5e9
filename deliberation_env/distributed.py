"""Vector envs whose episodes run on Ray workers: ``de.vector_env(num_envs, workers=N, ...)``.

Generation is what costs: an env step takes microseconds, an LLM turn about a second on
a CPU. With ``workers=N`` (the ``ray`` extra) the ``num_envs`` episodes are split into N
contiguous slices; each slice is an in-process vector env on its own Ray actor, built there
by a *factory*: a picklable callable that takes a number of envs and returns a vector env
implementing :class:`~deliberation_env.vector_protocol.VectorEnv`
(:meth:`DeliberationVectorEnv.factory <deliberation_env.meta.vector.DeliberationVectorEnv.factory>`,
:meth:`TextDeliberationVectorEnv.factory <deliberation_env.text.vector.TextDeliberationVectorEnv.factory>`,
or ``functools.partial`` of a user's env class). Each worker builds its own team backend
from the same arguments (so give the team as spec strings: ``smollm2``,
``openai:<url>#<model>``, ...). :class:`RayVectorEnv` implements the same protocol, and
uses nothing else of the env it runs, so every learner written against it runs on it
unchanged. ``state()`` is forwarded where the family has one (the meta-action env).

Exact replay. The driver draws every env's problem and episode seed with the in-process
env's own code (its ``starts``: :meth:`deliberation_env.starts.Starts.draw`) and sends them
to the workers as explicit per-env options, so a seed gives the same episodes on 0, 1 or N
workers (an env's episode depends only on its problem, episode seed and actions) when the
team's texts depend on the request alone: the simulated team, llama.cpp. The default
team, int8 CTranslate2, samples per batch (:mod:`agents.ctranslate2_backend`), and N
workers form other batches: its texts then replay exactly only from the response cache.
The results come back in env order with the in-process env's shapes and infos.

Faults (:mod:`deliberation_env.ray_pool`, the pool shared with the rollout workers). The
driver keeps, per worker, the reset options and the actions of the current episode. A
worker that dies is restarted by Ray (``max_restarts``); its episodes are then played
again from the same options and actions, and the call that failed is sent again: the
caller sees the results of a run without the fault, with no episode repeated or lost (a
real team's responses come back from the node's response cache). A worker that raises
(bad actions, a backend fault) leaves the others rolled back the same way, so ``reset``
and ``step`` stay atomic for the whole batch. Errors name the worker, its envs and node.

Each node keeps its own SQLite response cache (SQLite over a network file system is
unsafe); ``deliberate cache merge --trust`` combines the nodes' caches afterwards (each
node signs its rows with its own key: :mod:`agents.cache`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from deliberation_env.ray_pool import Call, LostState, PoolWorker, WorkerError, WorkerPool
from deliberation_env.starts import Starts
from deliberation_env.values import check_action_keys, check_agent, is_integer
from deliberation_env.vector_protocol import Infos, Observations, StepResult, VectorEnv

__all__ = ["EnvWorker", "Factory", "LostEpisode", "RayVectorEnv", "WorkerError", "check_workers"]

Factory = Callable[[int], VectorEnv]
"""Builds an in-process vector env of the given number of envs (picklable: it runs on the workers)."""


class LostEpisode(LostState):
    """A restarted worker was asked to step an episode it no longer holds."""


# ------------------------------------------------------------------ the worker
class EnvWorker(PoolWorker):
    """A Ray actor's state: one in-process vector env over a slice of the envs.

    The env is built on first use, so that a restarted actor (Ray runs ``__init__``
    again) is cheap until the driver replays its episodes into it.

    Args:
        factory: Builds the slice's env (:data:`Factory`).
        num_envs: The slice's size.
    """

    def __init__(self, factory: Factory, num_envs: int) -> None:
        self.factory, self.num_envs = factory, num_envs
        self.venv: VectorEnv | None = None
        self.episode: int | None = None

    def env(self) -> VectorEnv:
        """The slice's vector env, built on first use."""
        if self.venv is None:
            self.venv = self.factory(self.num_envs)
        return self.venv

    def describe(self) -> dict[str, Any]:
        """What the driver mirrors: agents, spaces, episode length, starts and the node."""
        venv = self.env()
        agent = venv.possible_agents[0]
        return {
            **super().describe(),
            "possible_agents": list(venv.possible_agents),
            "n_agents": venv.n_agents,
            "episode_length": venv.episode_length,
            "observation_space": venv.observation_space(agent),
            "action_space": venv.action_space(agent),
            "starts": venv.starts,
        }

    def reset(self, episode: int, options: dict[str, list]) -> tuple[Observations, Infos, np.ndarray]:
        """Reset the slice's envs to the given problems and seeds; ``(obs, infos, active)``."""
        self.episode = None
        venv = self.env()
        obs, infos = venv.reset(options=options)
        self.episode = episode
        return obs, infos, venv.active

    def step(self, episode: int, actions: dict[str, Any]) -> tuple:
        """One step of episode ``episode`` (the slice steps on once its episodes have
        ended: the batch still runs); ``(obs, rewards, terms, truncs, infos, active)``.

        Raises:
            LostEpisode: When this worker does not hold ``episode`` (it was restarted).
        """
        if self.episode != episode:
            raise LostEpisode(f"this worker holds episode {self.episode}, not {episode}")
        venv = self.env()
        return (*venv.step_running(actions), venv.active)

    def replay(self, episode: int, options: dict[str, list], history: Sequence[dict[str, Any]]) -> np.ndarray:
        """Reset, then step through ``history``; ``active`` after it."""
        self.reset(episode, options)
        for actions in history:
            self.step(episode, actions)
        return self.env().active

    def state(self, episode: int) -> np.ndarray:
        """The slice's ``state()``, where its family has one (the meta-action env).

        Raises:
            LostEpisode: When this worker does not hold ``episode`` (it was restarted).
        """
        if self.episode != episode:
            raise LostEpisode(f"this worker holds episode {self.episode}, not {episode}")
        return self.env().state()


# ------------------------------------------------------------------ the driver
def concat(parts: Sequence[Any]) -> Any:
    """Per-slice results joined in env order: arrays along axis 0, lists chained, dicts by key."""
    first = parts[0]
    if isinstance(first, dict):
        return {key: concat([part[key] for part in parts]) for key in first}
    if isinstance(first, np.ndarray):
        return np.concatenate(parts)
    return [item for part in parts for item in part]


def split_actions(actions: Mapping[str, Any], bounds: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """Each worker's share of ``{agent: one action per env}``."""
    return [{agent: column[start:stop] for agent, column in actions.items()} for start, stop in bounds]


@dataclasses.dataclass
class Slice:
    """The driver's record of one worker: its envs and its episode so far."""

    start: int
    stop: int
    options: dict[str, list] | None = None
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    active: np.ndarray | None = None

    def holds(self) -> str:
        """Its envs, for messages (the worker numbers them from 0 in its own)."""
        return f"envs {self.start}..{self.stop - 1}, its env 0 is env {self.start}"


class RayVectorEnv:
    """A vector env whose envs run on Ray workers, behind the vector-env protocol.

    Args:
        factory: Builds an in-process vector env of a given size on each worker
            (:data:`Factory`; e.g. ``DeliberationVectorEnv.factory(task="gsm8k", team="smollm2")``).
        num_envs: Number of episodes stepped together.
        workers: Ray actors (>= 1, at most ``num_envs``); each runs a contiguous slice.
        worker_options: Ray actor options over
            :data:`~deliberation_env.ray_pool.DEFAULT_WORKER_OPTIONS`
            (``num_cpus``, ``num_gpus``, ``resources``, ``max_restarts``, ...).

    Raises:
        ImportError: When Ray is not installed (naming the ``ray`` extra).
        WorkerError: When a worker cannot build its env (naming the worker and the cause).
    """

    def __init__(
        self, factory: Factory, num_envs: int, workers: int, worker_options: Mapping[str, Any] | None = None
    ) -> None:
        check_workers(workers, num_envs)
        slices = np.array_split(np.arange(num_envs), workers)
        self._slices = [Slice(int(s[0]), int(s[-1]) + 1) for s in slices]
        self._pool = WorkerPool(
            EnvWorker,
            [(factory, part.stop - part.start) for part in self._slices],
            [part.holds() for part in self._slices],
            worker_options,
            restore=self._replay,
            stateful=("step", "state"),
        )
        first = self._pool.start("build its env")[0]
        self.workers = workers
        self.num_envs = int(num_envs)
        self.n_agents = first["n_agents"]
        self.possible_agents = first["possible_agents"]
        self.agents = list(self.possible_agents)
        self.episode_length = first["episode_length"]
        starts = first["starts"]
        self.starts = Starts(starts.problems, starts.split, starts.task_name, self.num_envs)
        self._observation_space = first["observation_space"]
        self._action_space = first["action_space"]
        self._rng = np.random.default_rng()
        self._episode = 0

    # ---------------------------------------------------------------- the protocol
    @property
    def problems(self) -> Sequence[Any]:
        """The problems of the split (what ``problem_index`` indexes)."""
        return self.starts.problems

    @property
    def active(self) -> np.ndarray:
        """(E,) bool: envs whose episode is still running."""
        if self._slices[0].active is None:
            return np.zeros(self.num_envs, dtype=bool)
        return np.concatenate([part.active for part in self._slices])

    @property
    def handles(self) -> list[Any]:
        """The workers' Ray actor handles, in env order."""
        return self._pool.handles

    @property
    def nodes(self) -> list[str]:
        """The Ray node id of each worker, in env order."""
        return self._pool.nodes

    def observation_space(self, agent: str) -> Any:
        """The observation space of one agent of one env."""
        check_agent(agent, self.possible_agents)
        return self._observation_space

    def action_space(self, agent: str) -> Any:
        """The action space of one agent of one env."""
        check_agent(agent, self.possible_agents)
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observations, Infos]:
        """Reset every env: the driver draws each env's problem and episode seed (as the
        in-process env does) and sends each worker its slice as explicit options.

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options``; nothing changes.
        """
        indices, seeds, rng = self.starts.draw(seed, options, self._rng, per_env=True)
        episode = self._episode + 1
        shares = [  # explicit options: each worker plays exactly the episodes the in-process env would
            {"problem_index": indices[part.start : part.stop], "episode_seed": seeds[part.start : part.stop]}
            for part in self._slices
        ]
        calls = [Call(k, "reset", (episode, share), "reset") for k, share in enumerate(shares)]
        results = self._pool.run(calls, undo=self._roll_back)
        for part, share, (_, _, active) in zip(self._slices, shares, results, strict=True):
            part.options, part.history, part.active = share, [], active
        self._rng, self._episode = rng, episode
        return concat([result[0] for result in results]), concat([result[1] for result in results])

    def step(self, actions: dict[str, Any]) -> StepResult:
        """Play one step in every running env.

        Raises:
            TypeError, ValueError: On bad actions, a step before ``reset`` or after every
                episode ended; every env is then exactly as before the call.
        """
        if self._slices[0].active is not None and not self.active.any():
            raise ValueError("every episode has ended: call reset() first")
        return self.step_running(actions)

    def step_running(self, actions: dict[str, Any]) -> StepResult:
        """:meth:`step`, which also steps a batch whose episodes have all ended.

        Raises:
            TypeError, ValueError: As :meth:`step`, but for a batch that has ended.
        """
        if self._slices[0].active is None:
            raise ValueError("no episode: call reset() before step()")
        check_action_keys(actions, self.agents)
        for agent in self.agents:
            column = actions[agent]
            if isinstance(column, str) or not isinstance(column, Sequence | np.ndarray) or len(column) != self.num_envs:
                raise ValueError(f"actions[{agent!r}] must be a sequence of {self.num_envs} actions (one per env)")
        shares = split_actions(actions, [(part.start, part.stop) for part in self._slices])
        calls = [Call(k, "step", (self._episode, share), "step") for k, share in enumerate(shares)]
        results = self._pool.run(calls, undo=self._roll_back)
        for part, share, result in zip(self._slices, shares, results, strict=True):
            part.history.append(share)
            part.active = result[-1]
        return tuple(concat([result[i] for result in results]) for i in range(5))

    def state(self) -> np.ndarray:
        """The in-process env's ``state()`` of every env, where its family has one (the
        meta-action env: (E, n * 12)).

        Raises:
            ValueError: Before ``reset``.
            AttributeError: When the env has no ``state()`` (naming the worker).
        """
        if self._slices[0].active is None:
            raise ValueError("state() needs episodes: call reset() first")
        calls = [Call(k, "state", (self._episode,), "return its state") for k in range(self.workers)]
        return np.concatenate(self._pool.run(calls))

    def close(self) -> None:
        """Stop the workers."""
        self._pool.close()

    # ---------------------------------------------------------------- faults
    def _replay(self, k: int) -> None:
        """Play worker ``k``'s current episode again: its reset options and actions so far."""
        part = self._slices[k]
        call = Call(k, "replay", (self._episode, part.options, part.history), "replay its episode")
        part.active = self._pool.run([call])[0]

    def _roll_back(self, k: int) -> None:
        """Put worker ``k`` back where the driver has it (after another worker's call failed)."""
        if self._slices[k].options is not None:
            self._replay(k)


def check_workers(workers: Any, num_envs: Any) -> None:
    """Raise unless ``workers`` is an integer in [1, num_envs]."""
    if not is_integer(workers) or isinstance(workers, bool):
        raise TypeError(f"workers must be an integer (0: in-process), got {workers!r}")
    if not is_integer(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if not 1 <= workers <= num_envs:
        raise ValueError(f"workers must be in [0, num_envs={num_envs}] (0: in-process), got {workers}")
