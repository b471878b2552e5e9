"""One pool of Ray actors for every worker of the package: restarts, replay, named errors.

Both kinds of Ray worker run on it: the env workers of
:class:`~deliberation_env.distributed.RayVectorEnv` (each holds a slice of a vector env)
and the rollout workers of the LLM-weight learners
(:class:`~algorithms.text.rollout_workers.RolloutWorkers`, each holds a copy of the policy).
What differs is the actor class and what a restarted actor must be given back before it
can work again; the pool does the rest.

**Calls.** :meth:`WorkerPool.run` sends a batch of :class:`Call` s (one method of one
worker each) at once and returns their results in order.

**Faults.** A worker that dies is restarted by Ray (``max_restarts``, default 3). Its
call is then sent again; when the call needs what the worker held (an episode, weights:
the pool's ``stateful`` methods), the pool first asks its owner to ``restore`` that worker
(replay its episode, ship it the weights). A worker that answers :class:`LostState` was
restarted between calls and is treated the same way. While Ray restarts a worker the
pool waits, up to :data:`RESTART_TIMEOUT_S`.

**Errors.** Every error names the worker, what it holds and what it was asked to do:
``Ray worker 1 of 2 (envs 3..4, node 8f1c…) could not step: ...``. Bad input (TypeError,
ValueError, AttributeError) keeps its type; anything else, and a worker dead more often
than it may be restarted, is a :class:`WorkerError`. ``run(..., undo=...)`` makes a batch
atomic: when a call fails, the workers whose calls succeeded are put back first.

**Signals.** Ray's start replaces the driver's SIGTERM handler (its own exits with status
15, and its core worker's logs the signal and aborts); a pool puts back a Python handler
that was there before it started Ray, so a command's "terminated (SIGTERM): ... --resume"
and exit status 143 (``algorithms.cli``) hold with Ray workers too (:func:`keep_sigterm_handler`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from deliberation_env.values import is_integer

DEFAULT_WORKER_OPTIONS = {"max_restarts": 3, "scheduling_strategy": "SPREAD"}
"""Ray actor options of a worker; ``worker_options`` overrides them. Without ``num_cpus``
a worker needs a free CPU to be placed but holds none while it runs (Ray's default for
actors), so several pools' workers share a machine; ``{"num_gpus": 1}`` gives each
worker a GPU of its own (and holds it)."""

RESTART_TIMEOUT_S = 600.0
"""Longest wait for Ray to restart a worker (a real team's model loads again)."""
RESTART_POLL_S = 0.5
"""How often a call to a restarting worker is tried again."""
INPUT_ERRORS = (TypeError, ValueError, AttributeError)
"""Errors of a worker that keep their type (bad input), with the worker named."""


class WorkerError(RuntimeError):
    """A Ray worker could not start or do its work, or died more often than it may be
    restarted; the message names the worker, what it holds, its node and the cause."""


class LostState(RuntimeError):
    """A restarted worker was asked for work that needs what it no longer holds."""


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError naming the extra to install."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            "workers > 0 (--rollout-workers, --env-workers) runs on Ray, which is not installed: "
            "pip install 'deliberation-env[ray]' (or use 0 workers: everything in this process)"
        ) from error
    return ray


@contextlib.contextmanager
def keep_sigterm_handler() -> Iterator[None]:
    """Put back, after the block, the Python SIGTERM handler installed before it, where
    the block replaced it (Ray's start does, in the driver's main thread: its handler
    exits with status 15, and its core worker's C handler, which Python does not see,
    logs the signal and aborts). The default handler, or one outside the main thread,
    is left to the block (Ray's, then, which shuts Ray down on its way out)."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if callable(before):  # set again even where Python still names it: a C handler may sit in its place
            signal.signal(signal.SIGTERM, before)


def wait_for_restart(waited: float) -> float:
    """Wait one poll for an actor Ray is restarting; the seconds waited in all so far.

    Raises:
        TimeoutError: Once :data:`RESTART_TIMEOUT_S` have been waited.
    """
    if waited >= RESTART_TIMEOUT_S:
        raise TimeoutError(f"not back after {RESTART_TIMEOUT_S:.0f} s")
    time.sleep(RESTART_POLL_S)
    return waited + RESTART_POLL_S


def actor_options(worker_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """:data:`DEFAULT_WORKER_OPTIONS` overridden by ``worker_options``, checked.

    Raises:
        ValueError: When ``max_restarts`` is not an integer >= 0.
    """
    options = {**DEFAULT_WORKER_OPTIONS, **(worker_options or {})}
    if not is_integer(options["max_restarts"]) or options["max_restarts"] < 0:
        raise ValueError(f"worker_options['max_restarts'] must be an integer >= 0, got {options['max_restarts']!r}")
    return options


class PoolWorker:
    """The base of a pool's actor classes: :meth:`describe` says where the worker runs.

    A subclass extends :meth:`describe` with what its owner checks at start, and raises
    (a subclass of) :class:`LostState` when asked for work it lost in a restart.
    """

    def describe(self) -> dict[str, Any]:
        """``{"node": the Ray node id}``; subclasses add their own entries."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id()}


@dataclasses.dataclass(frozen=True)
class Call:
    """One method call on one worker of a pool."""

    worker: int
    """The worker's index in the pool."""
    method: str
    """The name of the actor's method."""
    args: tuple
    """Its arguments."""
    doing: str
    """What the call does, for errors: ``"step"``, ``"sample requests 0..3 of agent_0"``."""


class WorkerPool:
    """Ray actors of one class, called in batches through their faults (module docstring).

    Args:
        actor: The actor class (a :class:`PoolWorker`), built on each worker.
        arguments: One tuple of constructor arguments per worker.
        holds: What each worker holds, for errors (``"envs 0..3"``, ``"a copy of the policy"``).
        worker_options: Ray actor options over :data:`DEFAULT_WORKER_OPTIONS`
            (``num_cpus``, ``num_gpus``, ``resources``, ``max_restarts``, ...).
        restore: Gives a restarted worker (by index) back what its ``stateful`` calls need.
        stateful: The methods that need what a worker holds.

    Raises:
        ImportError: When Ray is not installed (naming the ``ray`` extra).
        ValueError: On a bad ``max_restarts``, or ``stateful`` methods without ``restore``.
    """

    def __init__(
        self,
        actor: type[PoolWorker],
        arguments: Sequence[tuple],
        holds: Sequence[str],
        worker_options: Mapping[str, Any] | None = None,
        restore: Callable[[int], None] | None = None,
        stateful: Collection[str] = (),
    ) -> None:
        if len(arguments) != len(holds):
            raise ValueError(f"one 'holds' per worker: {len(arguments)} workers, {len(holds)} holds")
        if stateful and restore is None:
            raise ValueError(f"stateful methods {sorted(stateful)} need a restore")
        options = actor_options(worker_options)
        ray = import_ray()
        self.restarts = int(options["max_restarts"])
        remote = ray.remote(actor).options(**options)
        with keep_sigterm_handler():  # the first actor starts Ray
            self.handles = [remote.remote(*args) for args in arguments]
        self.holds = list(holds)
        self.nodes = [""] * len(self.handles)
        self.restore, self.stateful = restore, frozenset(stateful)

    @property
    def size(self) -> int:
        """The number of workers."""
        return len(self.handles)

    def start(self, doing: str) -> list[dict[str, Any]]:
        """Every worker's :meth:`PoolWorker.describe`, its node noted; on any failure the
        pool is closed and the error (naming the worker, ``doing`` and the cause) raised."""
        try:
            descriptions = self.run([Call(k, "describe", (), doing) for k in range(self.size)])
        except Exception:
            self.close()
            raise
        self.nodes = [description["node"] for description in descriptions]
        return descriptions

    def name(self, k: int) -> str:
        """``Ray worker k of N (what it holds, node ...)``, for messages."""
        node = f", node {self.nodes[k][:12]}" if self.nodes[k] else ""
        return f"Ray worker {k} of {self.size} ({self.holds[k]}{node})"

    def run(self, calls: Sequence[Call], undo: Callable[[int], None] | None = None) -> list[Any]:
        """Send ``calls`` at once; their results in order, through the workers' faults.

        Args:
            calls: The calls, at most one per worker when ``undo`` is given.
            undo: When a call fails, puts back each worker whose call succeeded, before the
                error is raised (so that the batch changes nothing).

        Raises:
            TypeError, ValueError, AttributeError: A worker's bad-input error, the worker named.
            WorkerError: Any other failure of the first call that failed.
        """
        refs = [self._send(call) for call in calls]
        results, failures = [], []
        for call, ref in zip(calls, refs, strict=True):
            try:
                results.append(self._result(call, ref))
            except Exception as error:  # noqa: BLE001 (raised below, once every call is done)
                failures.append((call, error))
        if not failures:
            return results
        if undo is not None:
            failed = {call.worker for call, _ in failures}
            for call in calls:
                if call.worker not in failed:
                    undo(call.worker)
        call, error = failures[0]
        raise self._named(call, error) from error

    def close(self) -> None:
        """Stop the workers."""
        ray = import_ray()
        for handle in self.handles:
            ray.kill(handle, no_restart=True)

    def _send(self, call: Call) -> Any:
        return getattr(self.handles[call.worker], call.method).remote(*call.args)

    def _result(self, call: Call, ref: Any) -> Any:
        """``ray.get(ref)`` through the worker's faults: wait while Ray restarts it; once it
        died or lost its state (up to ``max_restarts`` times), restore it before a stateful
        call, and send the call again."""
        ray = import_ray()
        deaths, waited = 0, 0.0
        while True:
            try:
                return ray.get(ref)
            except ray.exceptions.ActorUnavailableError:  # restarting: not a new death
                waited = wait_for_restart(waited)
            except (ray.exceptions.RayActorError, LostState):
                deaths += 1
                if deaths > self.restarts:
                    raise
            if call.method in self.stateful:
                self.restore(call.worker)
            ref = self._send(call)

    def _named(self, call: Call, error: Exception) -> Exception:
        """The error to raise for ``call``'s ``error``: bad input keeps its type, anything
        else becomes a :class:`WorkerError`; both name the worker, the call and the cause."""
        ray = import_ray()
        cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error
        where = f"{self.name(call.worker)} could not {call.doing}"
        if type(cause) in INPUT_ERRORS:
            return type(cause)(f"{where}: {cause}")
        return WorkerError(f"{where}: {type(cause).__name__}: {cause}")
