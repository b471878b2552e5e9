"""Starting Ray keeps the command's SIGTERM handler.

A GPU user who sent SIGTERM (a scheduler's preemption) to ``train text --rollout-workers 1``
got Ray's core worker's "*** SIGTERM received ***" stack and an abort (exit 134), not the
command's "terminated (SIGTERM): ... --resume" line and 143: Ray's start in the driver
replaces the handler :func:`algorithms.cli.sigterm_interrupts` installed. A pool now puts a
Python handler back; these tests stand a fake Ray in for the real one (no cluster starts).
"""

from __future__ import annotations

import signal

import pytest

from deliberation_env import ray_pool
from deliberation_env.ray_pool import PoolWorker, WorkerPool, keep_sigterm_handler


def rays_handler(signum, frame):
    """What Ray's start installs (it exits with status 15)."""
    raise SystemExit(signum)


class FakeActorClass:
    """``ray.remote(actor)``: its ``options(...).remote(...)`` starts "Ray" the first time,
    which replaces the SIGTERM handler, as the real one's start does."""

    def options(self, **options):
        return self

    def remote(self, *args):
        signal.signal(signal.SIGTERM, rays_handler)
        return object()


class FakeRay:
    """The ``ray`` module, as far as :class:`WorkerPool` starts its actors."""

    def remote(self, actor):
        return FakeActorClass()


@pytest.fixture
def fake_ray(monkeypatch):
    monkeypatch.setattr(ray_pool, "import_ray", FakeRay)
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_pool_puts_back_the_python_sigterm_handler_that_starting_ray_replaced(fake_ray):
    def commands(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, commands)
    pool = WorkerPool(PoolWorker, [(), ()], ["a", "b"])
    assert len(pool.handles) == 2
    assert signal.getsignal(signal.SIGTERM) is commands


def test_the_default_handler_is_left_to_ray(fake_ray):
    """Where nothing of Python's handled SIGTERM, Ray's handler (which shuts Ray down on
    its way out) stays."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    WorkerPool(PoolWorker, [()], ["a"])
    assert signal.getsignal(signal.SIGTERM) is rays_handler


def test_the_handler_is_set_again_even_where_python_still_names_it(monkeypatch):
    """Ray's core worker installs a C handler that Python's ``getsignal`` does not see, so
    the handler is set again whether or not Python reports a change."""
    calls = []

    def commands(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, commands)
    monkeypatch.setattr(ray_pool.signal, "signal", lambda number, handler: calls.append((number, handler)))
    try:
        with keep_sigterm_handler():
            pass
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, previous)
    assert calls == [(signal.SIGTERM, commands)]
