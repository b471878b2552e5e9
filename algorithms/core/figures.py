"""What the figures of both families share (matplotlib-free helpers)."""

from __future__ import annotations

import numpy as np


def fitted_range(
    values: list[np.ndarray], margin: float = 0.1, floor: float = 0.02, limits: tuple[float, float] | None = (0.0, 1.0)
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
