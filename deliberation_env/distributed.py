"""Vector envs whose episodes run on Ray workers: ``de.vector_env(num_envs, workers=N, ...)``.

Generation is what costs: an env step takes microseconds, an LLM turn about a second on
a CPU. With ``workers=N`` (the ``ray`` extra) the ``num_envs`` episodes are split into N
contiguous slices; each slice is an in-process vector env (:mod:`deliberation_env.meta.vector`
or :mod:`deliberation_env.text.vector`) on its own Ray actor, with its own team backend
built on the worker from the same arguments (so give the team as spec strings:
``smollm2``, ``openai:<url>#<model>``, ...). The API is the in-process env's, so every
learner runs on it unchanged.

Exact replay. The driver draws every env's problem and episode seed with the in-process
env's own code (:meth:`deliberation_env.starts.Starts.draw`) and sends them to the
workers as explicit per-env options, so a seed gives the same episodes on 0, 1 or N
workers (an env's episode depends only on its problem, episode seed and actions) when the
team's texts depend on the request alone: the simulated team, llama.cpp. The default
team, int8 CTranslate2, samples per batch (:mod:`agents.ctranslate2_backend`), and N
workers form other batches: its texts then replay exactly only from the response cache.
The results come back in env order with the in-process env's shapes and infos.

Faults. The driver keeps, per worker, the reset options and the actions of the current
episode. A worker that dies is restarted by Ray (``max_restarts``); its episodes are then
played again from the same options and actions, and the call that failed is sent again:
the caller sees the results of a run without the fault, with no episode repeated or lost
(a real team's responses come back from the node's response cache). A worker that raises
(bad actions, a backend fault) leaves the others rolled back the same way, so ``reset``
and ``step`` stay atomic for the whole batch.

Each node keeps its own SQLite response cache (SQLite over a network file system is
unsafe); ``deliberate cache merge`` combines the nodes' caches afterwards.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from deliberation_env.starts import Starts
from deliberation_env.values import check_action_keys, is_integer

DEFAULT_WORKER_OPTIONS = {"max_restarts": 3, "scheduling_strategy": "SPREAD"}
"""Ray actor options of a worker; ``worker_options`` overrides them. Without ``num_cpus``
a worker needs a free CPU to be placed but holds none while it runs (Ray's default for
actors), so several vector envs' workers share a machine; ``{"num_gpus": 1}`` gives each
worker a GPU of its own (and holds it)."""


RESTART_TIMEOUT_S = 600.0
"""Longest wait for Ray to restart a worker (a real team's model loads again)."""
RESTART_POLL_S = 0.5
"""How often a call to a restarting worker is tried again."""


def wait_for_restart(waited: float) -> float:
    """Wait one poll for an actor Ray is restarting; the seconds waited in all so far.

    Raises:
        TimeoutError: Once :data:`RESTART_TIMEOUT_S` have been waited.
    """
    if waited >= RESTART_TIMEOUT_S:
        raise TimeoutError(f"not back after {RESTART_TIMEOUT_S:.0f} s")
    time.sleep(RESTART_POLL_S)
    return waited + RESTART_POLL_S


class WorkerError(RuntimeError):
    """A Ray worker could not build its env or died more often than it may be restarted;
    the message names the worker, its envs, its node and the cause."""


class LostEpisode(RuntimeError):
    """A restarted worker was asked to step an episode it no longer holds."""


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError naming the extra to install."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            "workers > 0 runs the envs on Ray, which is not installed: "
            "pip install 'deliberation-env[ray]' (or use workers=0, the in-process env)"
        ) from error
    return ray


# ------------------------------------------------------------------ the families
def _build_meta(num_envs: int, kwargs: Mapping[str, Any]) -> Any:
    from deliberation_env.meta.vector import DeliberationVectorEnv

    return DeliberationVectorEnv(num_envs, **kwargs)


def _build_text(num_envs: int, kwargs: Mapping[str, Any]) -> Any:
    from deliberation_env.text.vector import TextDeliberationVectorEnv

    return TextDeliberationVectorEnv(num_envs, **kwargs)


def _check_meta(kwargs: Mapping[str, Any]) -> None:
    """Check the meta-action env's arguments on the driver, before any worker starts."""
    from deliberation_env.meta.config import EnvConfig
    from deliberation_env.meta.env import check_infos

    check_infos(kwargs.get("infos", "rich"))
    EnvConfig(**{name: value for name, value in kwargs.items() if name != "infos"})


def _check_nothing(kwargs: Mapping[str, Any]) -> None:
    """The text env's arguments are checked where it is built, on the workers."""


def _idle_meta(venv: Any) -> tuple:
    """The in-process env's step when all its episodes have ended (which it refuses: a
    worker gets there when the *batch* still runs): zero rewards, per-step infos zeroed."""
    venv._core.step(np.zeros((venv.num_envs, venv.n_agents), dtype=np.int64))
    return _idle_results(venv, venv._observations(), venv._infos())


def _idle_text(venv: Any) -> tuple:
    """The text env's step when all its episodes have ended (see :func:`_idle_meta`)."""
    venv._engine.step([None] * venv.num_envs)
    return _idle_results(venv, venv._observations(), venv._infos())


def _idle_results(venv: Any, obs: Any, infos: list) -> tuple:
    size = venv.num_envs
    return (
        obs,
        {agent: np.zeros(size, dtype=np.float32) for agent in venv.agents},
        {agent: np.ones(size, dtype=bool) for agent in venv.agents},
        {agent: np.zeros(size, dtype=bool) for agent in venv.agents},
        infos,
    )


def _meta_starts(venv: Any) -> Starts:
    return venv._core.starts


def _text_starts(venv: Any) -> Starts:
    return venv._engine.starts


@dataclasses.dataclass(frozen=True)
class Family:
    """What differs between the env families on a worker."""

    build: Callable[[int, Mapping[str, Any]], Any]
    """Builds the in-process vector env of a slice."""
    check: Callable[[Mapping[str, Any]], None]
    """Checks the env's arguments on the driver (errors name the argument)."""
    idle: Callable[[Any], tuple]
    """A step of an env whose episodes have all ended (the batch goes on)."""
    starts: Callable[[Any], Starts]
    """The env's problems and reset rules."""
    length: str
    """The attribute holding the episode length (``max_rounds`` or ``max_turns``)."""
    extra: tuple[str, ...]
    """Further attributes the driver serves (``task``; ``protocol``)."""


FAMILIES = {
    "meta": Family(_build_meta, _check_meta, _idle_meta, _meta_starts, "max_rounds", ("task", "info_mode")),
    "text": Family(_build_text, _check_nothing, _idle_text, _text_starts, "max_turns", ("protocol",)),
}


# ------------------------------------------------------------------ the worker
class EnvWorker:
    """A Ray actor's state: one in-process vector env over a slice of the envs.

    The env is built on first use, so that a restarted actor (Ray runs ``__init__``
    again) is cheap until the driver replays its episodes into it.

    Args:
        family: ``"meta"`` or ``"text"``.
        num_envs: The slice's size.
        kwargs: The env's arguments.
    """

    def __init__(self, family: str, num_envs: int, kwargs: Mapping[str, Any]) -> None:
        self.family, self.num_envs, self.kwargs = FAMILIES[family], num_envs, dict(kwargs)
        self.venv: Any = None
        self.episode: int | None = None

    def env(self) -> Any:
        """The slice's vector env, built on first use."""
        if self.venv is None:
            self.venv = self.family.build(self.num_envs, self.kwargs)
        return self.venv

    def describe(self) -> dict[str, Any]:
        """What the driver mirrors: agents, spaces, episode length, problems and where it runs."""
        import ray

        venv, family = self.env(), self.family
        agent = venv.possible_agents[0]
        return {
            "possible_agents": list(venv.possible_agents),
            "n_agents": venv.n_agents,
            "length": getattr(venv, family.length),
            "observation_space": venv.observation_space(agent),
            "action_space": venv.action_space(agent),
            "starts": family.starts(venv),
            "extra": {name: getattr(venv, name) for name in family.extra},
            "node": ray.get_runtime_context().get_node_id(),
        }

    def reset(self, episode: int, options: dict[str, list]) -> tuple:
        """Reset the slice's envs to the given problems and seeds; ``(obs, infos, active)``."""
        self.episode = None
        venv = self.env()
        obs, infos = venv.reset(options=options)
        self.episode = episode
        return obs, infos, venv.active

    def step(self, episode: int, actions: dict[str, Any]) -> tuple:
        """One step of episode ``episode``; ``(obs, rewards, terms, truncs, infos, active)``.

        Raises:
            LostEpisode: When this worker does not hold ``episode`` (it was restarted).
        """
        if self.episode != episode:
            raise LostEpisode(f"this worker holds episode {self.episode}, not {episode}")
        venv = self.env()
        results = venv.step(actions) if venv.active.any() else self.family.idle(venv)
        return (*results, venv.active)

    def replay(self, episode: int, options: dict[str, list], history: Sequence[dict[str, Any]]) -> np.ndarray:
        """Reset, then step through ``history``; ``active`` after it."""
        self.reset(episode, options)
        for actions in history:
            self.step(episode, actions)
        return self.venv.active

    def state(self) -> np.ndarray:
        """The slice's ``state()`` (meta-action env)."""
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

    handle: Any
    start: int
    stop: int
    node: str = ""
    options: dict[str, list] | None = None
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    active: np.ndarray | None = None

    def name(self, index: int, count: int) -> str:
        """``Ray worker k of N (envs a..b, node ...)`` for messages."""
        node = f", node {self.node[:12]}" if self.node else ""
        return f"Ray worker {index} of {count} (envs {self.start}..{self.stop - 1}{node})"


class RayVectorEnv:
    """A vector env whose envs run on Ray workers, behind the in-process env's API.

    Args:
        family: ``"meta"`` (like :class:`deliberation_env.meta.vector.DeliberationVectorEnv`) or
            ``"text"`` (like :class:`deliberation_env.text.vector.TextDeliberationVectorEnv`).
        num_envs: Number of episodes stepped together.
        workers: Ray actors (>= 1, at most ``num_envs``); each runs a contiguous slice.
        worker_options: Ray actor options over :data:`DEFAULT_WORKER_OPTIONS`
            (``num_cpus``, ``num_gpus``, ``resources``, ``max_restarts``, ...).
        **kwargs: The in-process env's arguments, sent to every worker.

    Raises:
        ImportError: When Ray is not installed (naming the ``ray`` extra).
        WorkerError: When a worker cannot build its env (naming the worker and the cause).
    """

    def __init__(
        self,
        family: str,
        num_envs: int,
        workers: int,
        worker_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
        check_workers(workers, num_envs)
        FAMILIES[family].check(kwargs)
        ray = import_ray()
        options = {**DEFAULT_WORKER_OPTIONS, **(worker_options or {})}
        if not is_integer(options["max_restarts"]) or options["max_restarts"] < 0:
            raise ValueError(f"worker_options['max_restarts'] must be an integer >= 0, got {options['max_restarts']!r}")
        self._restarts = int(options["max_restarts"])
        actor = ray.remote(EnvWorker).options(**options)
        bounds = [(int(s[0]), int(s[-1]) + 1) for s in np.array_split(np.arange(num_envs), workers)]
        self.workers = workers
        self._slices = [Slice(actor.remote(family, stop - start, kwargs), start, stop) for start, stop in bounds]
        try:
            descriptions = self._gather("build its env", [(k, "describe", ()) for k in range(workers)])
        except Exception:
            self.close()
            raise
        for part, description in zip(self._slices, descriptions, strict=True):
            part.node = description["node"]
        first = descriptions[0]
        self.family = family
        self.num_envs = int(num_envs)
        self.n_agents = first["n_agents"]
        self.possible_agents = first["possible_agents"]
        self.agents = list(self.possible_agents)
        setattr(self, FAMILIES[family].length, first["length"])
        for name, value in first["extra"].items():
            setattr(self, name, value)
        starts = first["starts"]
        self._starts = Starts(starts.problems, starts.split, starts.task_name, self.num_envs)
        self._observation_space = first["observation_space"]
        self._action_space = first["action_space"]
        self._rng = np.random.default_rng()
        self._episode = 0

    # ---------------------------------------------------------------- the API
    @property
    def problems(self) -> Sequence[Any]:
        """The problems of the split (what ``problem_index`` indexes)."""
        return self._starts.problems

    @property
    def active(self) -> np.ndarray:
        """(E,) bool: envs whose episode is still running."""
        if self._slices[0].active is None:
            return np.zeros(self.num_envs, dtype=bool)
        return np.concatenate([part.active for part in self._slices])

    @property
    def handles(self) -> list[Any]:
        """The workers' Ray actor handles, in env order."""
        return [part.handle for part in self._slices]

    @property
    def nodes(self) -> list[str]:
        """The Ray node id of each worker, in env order."""
        return [part.node for part in self._slices]

    def observation_space(self, agent: str) -> Any:
        """The observation space of one agent of one env."""
        return self._observation_space

    def action_space(self, agent: str) -> Any:
        """The action space of one agent of one env."""
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env: the driver draws each env's problem and episode seed (as the
        in-process env does) and sends each worker its slice as explicit options.

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options``; nothing changes.
        """
        indices, seeds, rng = self._starts.draw(seed, options, self._rng, per_env=True)
        episode = self._episode + 1
        calls = [
            (k, "reset", (episode, {"problem_index": indices[p.start : p.stop], "episode_seed": seeds[p.start : p.stop]}))
            for k, p in enumerate(self._slices)
        ]  # explicit options: each worker plays exactly the episodes the in-process env would
        results = self._gather("reset", calls, atomic=True)
        for (_, _, (_, slice_options)), part, (_, _, active) in zip(calls, self._slices, results, strict=True):
            part.options, part.history, part.active = slice_options, [], active
        self._rng, self._episode = rng, episode
        return concat([result[0] for result in results]), concat([result[1] for result in results])

    def step(self, actions: dict[str, Any]):
        """Play one step in every running env.

        Raises:
            TypeError, ValueError: On bad actions, a step before ``reset`` or after every
                episode ended; every env is then exactly as before the call.
        """
        if self._slices[0].active is None:
            raise ValueError("no episode: call reset() before step()")
        if not self.active.any():
            raise ValueError("every episode has ended: call reset() first")
        check_action_keys(actions, self.agents)
        for agent in self.agents:
            column = actions[agent]
            if isinstance(column, str) or not isinstance(column, Sequence | np.ndarray) or len(column) != self.num_envs:
                raise ValueError(f"actions[{agent!r}] must be a sequence of {self.num_envs} actions (one per env)")
        shares = split_actions(actions, [(p.start, p.stop) for p in self._slices])
        calls = [(k, "step", (self._episode, share)) for k, share in enumerate(shares)]
        results = self._gather("step", calls, atomic=True)
        for part, share, result in zip(self._slices, shares, results, strict=True):
            part.history.append(share)
            part.active = result[-1]
        return tuple(concat([result[i] for result in results]) for i in range(5))

    def state(self) -> np.ndarray:
        """(E, n * 12): the meta-action env's global state, gathered from the workers."""
        if self.family != "meta":
            raise AttributeError("state() is an API of the meta-action env only")
        if self._slices[0].active is None:
            raise ValueError("state() needs episodes: call reset() first")
        return np.concatenate(self._gather("return its state", [(k, "state", ()) for k in range(self.workers)]))

    def close(self) -> None:
        """Stop the workers."""
        ray = import_ray()
        for part in self._slices:
            ray.kill(part.handle, no_restart=True)

    # ---------------------------------------------------------------- calls and faults
    def _gather(self, doing: str, calls: Sequence[tuple[int, str, tuple]], atomic: bool = False) -> list[Any]:
        """Run ``calls`` (worker, method, args) on the workers at once; their results, or an
        error naming the first worker that failed. A worker that died is replayed and called
        again. ``atomic``: when a call fails, the workers whose calls succeeded are put back
        where they were (their episodes replayed), so that the batch changes nothing."""
        refs = [getattr(self._slices[k].handle, method).remote(*args) for k, method, args in calls]
        results, failures = [], []
        for (k, method, args), ref in zip(calls, refs, strict=True):
            try:
                results.append(self._get_with_recovery(k, ref, method, args))
            except Exception as error:  # noqa: BLE001 (raised below, once every call is done)
                failures.append((k, error))
        if not failures:
            return results
        k, error = failures[0]
        if atomic:
            failed = {worker for worker, _ in failures}
            for worker, _, _ in calls:
                if worker not in failed and self._slices[worker].options is not None:
                    self._replay(worker)
        raise self._named(k, doing, error) from error

    def _get_with_recovery(self, k: int, ref: Any, method: str, args: tuple) -> Any:
        """``ray.get(ref)``, through worker ``k``'s faults: while Ray restarts it, wait (up to
        :data:`RESTART_TIMEOUT_S`); once it died or lost its episode (up to ``max_restarts``
        times), replay its episode before a step, and call ``method`` again."""
        ray = import_ray()
        deaths, waited = 0, 0.0
        while True:
            try:
                return ray.get(ref)
            except ray.exceptions.ActorUnavailableError:  # restarting: not a new death
                waited = wait_for_restart(waited)
            except (ray.exceptions.RayActorError, LostEpisode):
                deaths += 1
                if deaths > self._restarts:
                    raise
            if method == "step":
                self._replay(k)
            ref = getattr(self._slices[k].handle, method).remote(*args)

    def _replay(self, k: int) -> None:
        """Play worker ``k``'s current episode again: its reset options and actions so far."""
        part = self._slices[k]
        args = (self._episode, part.options, part.history)
        part.active = self._get_with_recovery(k, part.handle.replay.remote(*args), "replay", args)

    def _named(self, k: int, doing: str, error: Exception) -> Exception:
        """The error to raise for worker ``k``'s ``error``: bad input keeps its type, with
        the worker named; anything else is a :class:`WorkerError` naming the cause."""
        ray = import_ray()
        name = self._slices[k].name(k, self.workers)
        cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error
        if type(cause) in (TypeError, ValueError):
            return type(cause)(f"{name}, its env numbers from {self._slices[k].start}: {cause}")
        return WorkerError(f"{name} could not {doing}: {type(cause).__name__}: {cause}")


def check_workers(workers: Any, num_envs: Any) -> None:
    """Raise unless ``workers`` is an integer in [1, num_envs]."""
    if not is_integer(workers) or isinstance(workers, bool):
        raise TypeError(f"workers must be an integer (0: in-process), got {workers!r}")
    if not is_integer(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if not 1 <= workers <= num_envs:
        raise ValueError(f"workers must be in [0, num_envs={num_envs}] (0: in-process), got {workers}")
