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

**Faults.** The workers are a :class:`~deliberation_env.ray_pool.WorkerPool`, the pool the
env workers run on. A worker that dies is restarted by Ray (``max_restarts``); it builds
its copy again, the pool has the driver ship it the current weights and sends its slice
again. Sampling is a pure function of (prompt, seed, weights), so nothing is duplicated
or lost. Errors name the worker and the requests it was sampling.

**The base must agree.** Only the trainable weights travel; the frozen base each worker
builds must be the driver's. On start every worker's base is hashed
(:func:`base_fingerprint`) and compared with the driver's: a factory that builds another
base (another file, another seed of a random model) is refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from agents.base import Message
from agents.trainable_lm import Completion, TrainableLM
from agents.trainable_lm.weights import base_digest
from deliberation_env.ray_pool import (
    Call,
    LostState,
    PoolWorker,
    WorkerError,
    WorkerPool,
    import_ray,
)
from deliberation_env.values import is_integer


class StaleWeights(LostState):
    """A rollout worker was asked to sample with weights it does not hold."""


def base_fingerprint(lm: TrainableLM) -> str:
    """SHA-256 of every byte of the frozen weights of ``lm`` (:func:`agents.trainable_lm.weights.base_digest`):
    what workers must share with the learner for shipping only the trainable weights to be correct."""
    return base_digest(lm)


class RolloutWorker(PoolWorker):
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
        return {**super().describe(), "fingerprint": base_fingerprint(self.lm), "agents": self.lm.agents}

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
        worker_options: Ray actor options over
            :data:`~deliberation_env.ray_pool.DEFAULT_WORKER_OPTIONS` (e.g.
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
        self.version: int | None = None
        self._weights: Any = None
        self._pool = WorkerPool(
            RolloutWorker,
            [(build, threads)] * workers,
            ["a copy of the policy"] * workers,
            worker_options,
            restore=self._ship,
            stateful=("sample",),
        )
        descriptions = self._pool.start("build its policy")
        expected = base_fingerprint(reference)
        for k, description in enumerate(descriptions):
            if description["agents"] != reference.agents or description["fingerprint"] != expected:
                self.close()
                raise WorkerError(
                    f"{self._pool.name(k)} built another policy than the learner's "
                    f"(agents {description['agents']} vs {reference.agents}, or another base model): "
                    "give RolloutWorkers a factory that builds the learner's model"
                )

    @property
    def workers(self) -> int:
        """The number of Ray actors."""
        return self._pool.size

    @property
    def handles(self) -> list[Any]:
        """The workers' Ray actor handles."""
        return self._pool.handles

    @property
    def nodes(self) -> list[str]:
        """The Ray node id of each worker."""
        return self._pool.nodes

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
        self._pool.run([self._load(k) for k in range(self.workers)])

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
            Call(
                k,
                "sample",
                (self.version, agent, [list(c) for c in chats[a:b]], [int(s) for s in seeds[a:b]], settings),
                f"sample requests {a}..{b - 1} of {agent}",
            )
            for k, (a, b) in enumerate(bounds)
        ]
        return [completion for part in self._pool.run(calls) for completion in part]

    def close(self) -> None:
        """Stop the workers."""
        self._pool.close()

    def _load(self, k: int) -> Call:
        return Call(k, "load", (self._weights, self.version), f"load the weights of version {self.version}")

    def _ship(self, k: int) -> None:
        """Give worker ``k`` (restarted, or stale) the current weights."""
        self._pool.run([self._load(k)])
