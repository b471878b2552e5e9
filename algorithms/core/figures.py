"""What the figures of both families share: the axis range and the 95% band of a quantity
(pure functions), and a figure that draws without pyplot.

Figures are :class:`matplotlib.figure.Figure` objects on an Agg canvas, made by
:func:`new_figure` and written by :func:`write_figure`: the backend is chosen where a figure
is made, never at import, so importing a plotting module leaves the caller's matplotlib
backend (a notebook's, an interactive window's) as it was, and no figure is kept in
pyplot's global state.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

SHARE = (0.0, 1.0)
"""The range of an accuracy or a share: a band is clipped to it."""


@dataclass(frozen=True)
class Band:
    """The mean over seeds and its 95% band, each of the shape of one seed's values.

    Attributes:
        mean: The mean over seeds.
        low: The band's lower edge (the mean where there is one seed).
        high: The band's upper edge.
    """

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def errors(self) -> np.ndarray:
        """``(2, ...)`` distances of the edges from the mean, as ``yerr`` takes them."""
        return np.stack([self.mean - self.low, self.high - self.mean])


def band(values: np.ndarray, limits: tuple[float, float] | None = SHARE) -> Band:
    """The mean over seeds (axis 0) and its 95% Student-t band, clipped to ``limits`` (a
    share's [0, 1]; None: not clipped). One seed gives a band of zero width.

    >>> b = band(np.array([[0.0, 0.5], [1.0, 0.5], [1.0, 0.5]]))
    >>> b.mean.round(3).tolist(), b.low.round(3).tolist(), b.high.tolist()
    ([0.667, 0.5], [0.0, 0.5], [1.0, 0.5])
    >>> band(np.array([[0.0], [1.0], [1.0]]), limits=None).high.round(3).tolist()
    [2.101]
    """
    values = np.asarray(values, dtype=float)
    mean = values.mean(axis=0)
    half = np.zeros_like(mean)
    if len(values) > 1:
        half = stats.t.ppf(0.975, len(values) - 1) * values.std(axis=0, ddof=1) / np.sqrt(len(values))
    low, high = mean - half, mean + half
    if limits is not None:
        low, high = np.clip(low, *limits), np.clip(high, *limits)
    return Band(mean, low, high)


def fitted_range(
    values: list[np.ndarray], margin: float = 0.1, floor: float = 0.02, limits: tuple[float, float] | None = SHARE
) -> tuple[float, float]:
    """An axis range around every value in ``values``: their span widened by ``margin`` of
    it (at least ``floor``) on each side, and kept within ``limits`` widened by ``floor``
    (a share's [0, 1]; None: no limits).

    >>> fitted_range([np.array([0.4, 0.5]), np.array([0.45])])
    (0.38, 0.52)
    >>> fitted_range([np.array([0.0, 1.1])], limits=None)
    (-0.11, 1.21)
    """
    flat = np.concatenate([np.ravel(v) for v in values])
    low, high = float(flat.min()), float(flat.max())
    pad = max(margin * (high - low), floor)
    low, high = low - pad, high + pad
    if limits is not None:
        low, high = max(low, limits[0] - floor), min(high, limits[1] + floor)
    return round(low, 6), round(high, 6)


def new_figure(**kwargs: Any) -> Figure:
    """A figure on an Agg canvas (``kwargs``: :class:`~matplotlib.figure.Figure`'s, e.g.
    ``figsize``); draw with ``figure.subplots(...)``."""
    figure = Figure(**kwargs)
    FigureCanvasAgg(figure)
    return figure


def write_figure(figure: Figure, path: str | Path, **kwargs: Any) -> Path:
    """Write ``figure`` to ``path`` at 120 dpi (``kwargs``: ``savefig``'s) and return the path."""
    figure.savefig(path, **{"dpi": 120, **kwargs})
    return Path(path)


def final_bars(
    groups: Mapping[str, Sequence[float]],
    learners: Collection[str],
    ylabel: str,
    title: str,
    limits: tuple[float, float] | None = SHARE,
) -> Figure:
    """A comparison's final accuracy per learner and baseline (``groups``: name -> its values
    over seeds): bars (``learners`` coloured, the rest grey) labelled with their value, 95%
    CIs clipped to ``limits`` (an accuracy's [0, 1]; None: a reward's, not clipped), and a y
    axis fitted around the intervals (not from 0, which flattens 0.945 against 0.963)."""
    names = list(groups)
    bands = [band(np.array(groups[name]), limits) for name in names]
    means = np.array([b.mean for b in bands])
    errors = np.stack([b.errors() for b in bands], axis=1)
    figure = new_figure(figsize=(1.0 * len(names) + 2, 4))
    ax = figure.subplots()
    ax.bar(names, means, yerr=errors, color=["C0" if name in learners else "C7" for name in names], capsize=4)
    for x, (mean, top) in enumerate(zip(means, means + errors[1], strict=True)):
        ax.annotate(f"{mean:.3f}", (x, top), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    low, high = fitted_range([means - errors[0], means + errors[1]], limits=limits)
    ax.set(ylabel=ylabel, title=title, ylim=(low, high + 0.1 * (high - low)))  # room for the labels
    ax.tick_params(axis="x", rotation=30)
    ax.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return figure
