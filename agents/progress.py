"""Progress of batched LLM work: requests and tokens done of each backend call, on stderr.

The env sends every turn of a phase (all agents of all envs) to a backend in one call,
which may decode for minutes. A job shows that work by running it inside
:func:`reporting`: there, every batched LLM call draws one tqdm bar, cleared when the call
returns, which the backend advances as its rows finish. The calls are an
:class:`agents.LLMAgent`'s phases (``solve``, ``refine``, ``confidence``), a
:class:`agents.TextPolicy`'s ``generate``, :meth:`agents.TrainableLM.sample` and any
backend's own ``generate`` or ``score``::

    refine:  51%|#####     | 37/72 [00:12<00:11, 3.02req/s, tokens=4321, tok/s=352]

Outside :func:`reporting` a backend reports to nothing. Reporting changes no result: the
backend decodes exactly what it would have, and only counts what it returns. A backend that
reports nothing while it runs (a user's own) still completes its bar when it returns.

A call made inside another call of the same thread (the response cache's inner backend,
generating its misses) draws no bar of its own: it advances the outer call's bar, whose
total is the whole batch; the cache advances it by its hits, the model by what it decodes.
Threads that a backend starts for one call (a model copy each) advance the bar they are
handed; they open none.

Example::

    from agents import progress

    with progress.reporting() as tally:
        generations = backend.generate(requests)
    assert tally.done == tally.requests == len(requests)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tqdm.auto import tqdm

BAR_DELAY_S = 1.0
"""A call's bar appears only once the call has run this long: calls served from the
response cache draw nothing."""

Advance = Callable[[int, int], None]
"""``advance(requests, tokens)``: that many more requests of the call are done, having
generated that many tokens."""


@dataclass(eq=False)
class Tally:
    """What the backend calls inside one :func:`reporting` block reported.

    Attributes:
        calls: Backend calls that drew a bar (outermost calls only).
        requests: Requests those calls were given.
        done: Requests reported done.
        tokens: Tokens reported generated.
    """

    calls: int = 0
    requests: int = 0
    done: int = 0
    tokens: int = 0


class _Reporting:
    """The :func:`reporting` blocks open in this process, and each thread's open call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tallies: list[tuple[Tally, bool]] = []  # (tally, show bars), innermost last
        self.calls = _OpenCall()

    def innermost(self) -> tuple[Tally, bool] | None:
        with self.lock:
            return self.tallies[-1] if self.tallies else None


class _OpenCall(threading.local):
    advance: Advance | None = None
    """The ``advance`` of this thread's open outermost call, if any."""


_STATE = _Reporting()


@contextlib.contextmanager
def reporting(enabled: bool = True) -> Iterator[Tally]:
    """Report the backend calls made inside the block, from any thread.

    Args:
        enabled: Draw the calls' bars on stderr (False: only count them in the tally, as a
            job's ``progress=False`` wants: nothing is printed).

    Yields:
        The :class:`Tally` of the calls made inside the block.
    """
    tally = Tally()
    entry = (tally, enabled)
    with _STATE.lock:
        _STATE.tallies.append(entry)
    try:
        yield tally
    finally:
        with _STATE.lock:
            _STATE.tallies.remove(entry)


@contextlib.contextmanager
def call(total: int, what: str = "generate") -> Iterator[Advance]:
    """One backend call of ``total`` requests: yields the ``advance`` its rows report to.

    Inside :func:`reporting` the outermost call of a thread draws a bar (see the module
    docstring); a call inside another advances the outer one's. Elsewhere ``advance`` does
    nothing.

    Args:
        total: Requests in the call.
        what: The bar's label, e.g. ``"generate"`` or ``"score"``.
    """
    if _STATE.calls.advance is not None:
        yield _STATE.calls.advance
        return
    active = _STATE.innermost()
    if active is None:
        yield _ignore
        return
    tally, show = active
    with _bar(total, what, show) as bar:
        with _STATE.lock:
            tally.calls += 1
            tally.requests += total
        progress = _CallProgress(tally, bar)
        _STATE.calls.advance = progress.advance
        try:
            yield progress.advance
            progress.advance(total - progress.done, 0)  # a call that returned did all its requests
        finally:
            _STATE.calls.advance = None


def _ignore(requests: int, tokens: int) -> None:
    """The ``advance`` of a call made outside :func:`reporting`."""


class _CallProgress:
    """The requests and tokens one call reported, counted into a tally and drawn on its bar."""

    def __init__(self, tally: Tally, bar: tqdm) -> None:
        self.tally, self.bar = tally, bar
        self.done = self.tokens = 0
        self.started = time.perf_counter()

    def advance(self, requests: int, tokens: int) -> None:
        """``requests`` more requests are done, having generated ``tokens`` (from any thread)."""
        with _STATE.lock:
            self.done += requests
            self.tokens += tokens
            self.tally.done += requests
            self.tally.tokens += tokens
            rate = self.tokens / max(time.perf_counter() - self.started, 1e-9)
            self.bar.set_postfix_str(f"tokens={self.tokens}, tok/s={rate:.0f}", refresh=False)
            self.bar.update(requests)


def _bar(total: int, what: str, show: bool) -> tqdm:
    """The bar of one call: cleared when closed, drawn after :data:`BAR_DELAY_S`."""
    return tqdm(total=total, desc=what, unit="req", leave=False, delay=BAR_DELAY_S, disable=not show)
