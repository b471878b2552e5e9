"""Rollout workers for the LLM-weight learners: copies of the policy on Ray actors generate.

Sampling is what an update costs (:mod:`algorithms.text.base`); :class:`RolloutWorkers`
spreads it over N Ray actors (the ``ray`` extra), each holding its own copy of the
:class:`~agents.trainable_lm.TrainableLM`, built on the worker by the same factory (e.g.
``functools.partial(build_lm, config, agents)``). The learner keeps training in its own
process; before each collection it ships its trainable weights (with LoRA, the adapters:
a few MB for SmolLM2-135M) to every worker through Ray's object store, once per update
(``ray.put`` once, every worker reads the same object).

**Staleness: none.** Each weight shipment carries a version; a worker asked to sample
with another version than the one it holds refuses (:class:`StaleWeights`), the driver
sends it the current weights and asks again. So every completion of an update comes from
the weights of that update, exactly as in-process sampling (on-policy; no asynchronous
mode with stale weights is offered).

**Same samples on 1 worker or N.** A completion depends only on its prompt, its seed and
the weights (:meth:`TrainableLM.sample` seeds each request on its own), so the requests
of a call are cut into contiguous slices, one per worker, and come back in order: the
same completions as sampling in one process, up to floating-point differences of
batches padded to other lengths.

**Faults.** A worker that dies is restarted by Ray (``max_restarts``); it builds its
copy again, the driver ships it the current weights and sends its slice again. Sampling
is a pure function of (prompt, seed, weights), so nothing is duplicated or lost.

**The base must agree.** Only the trainable weights travel; the frozen base each worker
builds must be the driver's. On start every worker's base is hashed
(:func:`base_fingerprint`) and compared with the driver's: a factory that builds another
base (another file, another seed of a random model) is refused with a clear error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from agents.base import Message
from agents.trainable_lm import Completion, TrainableLM
from deliberation_env.distributed import (
    DEFAULT_WORKER_OPTIONS,
    WorkerError,
    import_ray,
    wait_for_restart,
)
from deliberation_env.values import is_integer


class StaleWeights(RuntimeError):
    """A rollout worker was asked to sample with weights it does not hold."""


def base_fingerprint(lm: TrainableLM) -> str:
    """SHA-256 of the frozen weights of ``lm`` (names and bytes; LoRA adapters excluded).

    The base of a LoRA layout, the reference models of a full fine-tune: what workers must
    share with the learner for shipping only the trainable weights to be correct.
    """
    digest = hashlib.sha256()
    seen: set[int] = set()
    for agent in lm.agents:
        seat = lm.seats[agent]
        module = seat.model if seat.adapter is not None else seat.reference
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        for name, tensor in module.state_dict().items():
            if "lora_" in name:
                continue
            digest.update(name.encode())
            digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


class RolloutWorker:
    """A Ray actor's state: one copy of the policy, and the version of its weights.

    Args:
        build: Builds the worker's :class:`TrainableLM` (called on the worker).
        threads: torch threads of this worker (0: torch's default).
    """

    def __init__(self, build: Callable[[], TrainableLM], threads: int = 0) -> None:
        if threads:
            torch.set_num_threads(threads)
        self.lm = build()
        self.version: int | None = None

    def describe(self) -> dict[str, Any]:
        """The base's fingerprint, the agents and the node this worker runs on."""
        import ray

        return {
            "fingerprint": base_fingerprint(self.lm),
            "agents": self.lm.agents,
            "node": ray.get_runtime_context().get_node_id(),
        }

    def load(self, weights: Mapping[str, Mapping[str, torch.Tensor]], version: int) -> None:
        """Take the learner's trainable weights of ``version``."""
        self.lm.load_state_dict(weights)
        self.version = version

    def sample(self, version: int, agent: str, chats: list, seeds: list, settings: dict) -> list[Completion]:
        """:meth:`TrainableLM.sample` with weights ``version``.

        Raises:
            StaleWeights: When this worker holds other weights (or none: it was restarted).
        """
        if self.version != version:
            raise StaleWeights(f"this worker holds weights {self.version}, not {version}")
        return self.lm.sample(agent, chats, seeds, **settings)


class RolloutWorkers:
    """N Ray actors sampling completions with copies of the learner's policy.

    It samples as :meth:`TrainableLM.sample` does; the learner calls :meth:`sync` with its
    weights before sampling (:class:`~algorithms.text.base.TextPolicyGradientLearner`
    does, given ``sampler=RolloutWorkers(...)``).

    Args:
        build: Builds a :class:`TrainableLM` (picklable: it runs on each worker), the same
            layout and base as the learner's.
        workers: Number of Ray actors, >= 1.
        reference: The learner's policy, whose base the workers must match.
        threads: torch threads per worker (0: torch's default, every core of its node).
        worker_options: Ray actor options over the env workers'
            :data:`~deliberation_env.distributed.DEFAULT_WORKER_OPTIONS` (e.g.
            ``{"num_gpus": 1}`` for a GPU each).

    Raises:
        ImportError: When Ray is not installed (naming the ``ray`` extra).
        WorkerError: When a worker cannot build its policy, or builds another base.
    """

    def __init__(
        self,
        build: Callable[[], TrainableLM],
        workers: int,
        reference: TrainableLM,
        *,
        threads: int = 0,
        worker_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not is_integer(workers) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        ray = import_ray()
        options = {**DEFAULT_WORKER_OPTIONS, **(worker_options or {})}
        self._restarts = int(options["max_restarts"])
        actor = ray.remote(RolloutWorker).options(**options)
        self.handles = [actor.remote(build, threads) for _ in range(workers)]
        self.version: int | None = None
        self._weights: Any = None
        try:
            descriptions = [self._call(k, "build its policy", "describe") for k in range(workers)]
        except Exception:
            self.close()
            raise
        self.nodes = [d["node"] for d in descriptions]
        expected = base_fingerprint(reference)
        for k, description in enumerate(descriptions):
            if description["agents"] != reference.agents or description["fingerprint"] != expected:
                self.close()
                raise WorkerError(
                    f"rollout worker {k + 1}/{workers} built another policy than the learner's "
                    f"(agents {description['agents']} vs {reference.agents}, or another base model): "
                    "give RolloutWorkers a factory that builds the learner's model"
                )

    @property
    def workers(self) -> int:
        """The number of Ray actors."""
        return len(self.handles)

    def sync(self, weights: Mapping[str, Mapping[str, torch.Tensor]], version: int) -> None:
        """Make ``weights`` (the learner's ``lm.state_dict()``) version ``version`` of every worker.

        The weights go into Ray's object store once and every worker loads them before this
        returns (a no-op when ``version`` is already current; a worker that missed them,
        e.g. restarted, gets them again when it is next asked to sample).
        """
        if version == self.version:
            return
        self._weights = import_ray().put(dict(weights))
        self.version = version
        refs = [handle.load.remote(self._weights, version) for handle in self.handles]
        for k, ref in enumerate(refs):
            self._get(k, ref, "load the weights", "load", (self._weights, version))

    def sample(
        self, agent: str, chats: Sequence[Sequence[Message]], seeds: Sequence[int], **settings: Any
    ) -> list[Completion]:
        """One completion per chat, as :meth:`TrainableLM.sample` gives it (same arguments),
        the requests cut into one contiguous slice per worker.

        Raises:
            RuntimeError: Before the first :meth:`sync`.
            ValueError: On mismatched lengths.
        """
        if self.version is None:
            raise RuntimeError("RolloutWorkers.sample before sync: ship the learner's weights first")
        if len(chats) != len(seeds):
            raise ValueError(f"sample needs one seed per chat, got {len(chats)} chats and {len(seeds)} seeds")
        bounds = [(int(s[0]), int(s[-1]) + 1) for s in np.array_split(np.arange(len(chats)), self.workers) if len(s)]
        calls = [
            (k, (self.version, agent, [list(c) for c in chats[a:b]], [int(s) for s in seeds[a:b]], settings))
            for k, (a, b) in enumerate(bounds)
        ]
        refs = [self.handles[k].sample.remote(*args) for k, args in calls]
        completions: list[Completion] = []
        for (k, args), ref in zip(calls, refs, strict=True):
            completions.extend(self._get(k, ref, "sample", "sample", args))
        return completions

    def close(self) -> None:
        """Stop the workers."""
        ray = import_ray()
        for handle in self.handles:
            ray.kill(handle, no_restart=True)

    # ---------------------------------------------------------------- calls and faults
    def _call(self, k: int, doing: str, method: str, *args: Any) -> Any:
        return self._get(k, getattr(self.handles[k], method).remote(*args), doing, method, args)

    def _get(self, k: int, ref: Any, doing: str, method: str, args: tuple) -> Any:
        """``ray.get(ref)`` through worker ``k``'s faults: wait while Ray restarts it, give a
        restarted (or stale) worker the current weights, and call ``method`` again."""
        ray = import_ray()
        deaths, waited = 0, 0.0
        while True:
            try:
                return ray.get(ref)
            except ray.exceptions.ActorUnavailableError:  # restarting
                try:
                    waited = wait_for_restart(waited)
                except TimeoutError as error:
                    raise self._named(k, doing, error) from None
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as error:
                cause = error.cause if isinstance(error, ray.exceptions.RayTaskError) else error
                if isinstance(error, ray.exceptions.RayTaskError) and not isinstance(cause, StaleWeights):
                    raise self._named(k, doing, cause) from error
                if not isinstance(cause, StaleWeights):
                    deaths += 1
                    if deaths > self._restarts:
                        raise self._named(k, doing, cause) from error
                if method == "sample" and self._weights is not None:
                    load = (self._weights, self.version)
                    self._get(k, self.handles[k].load.remote(*load), doing, "load", load)
            ref = getattr(self.handles[k], method).remote(*args)

    def _named(self, k: int, doing: str, error: BaseException) -> Exception:
        """Bad input keeps its type, with the worker named; anything else is a WorkerError."""
        name = f"rollout worker {k + 1}/{self.workers}"
        if type(error) in (TypeError, ValueError):
            return type(error)(f"{name}: {error}")
        return WorkerError(f"{name} could not {doing}: {type(error).__name__}: {error}")
