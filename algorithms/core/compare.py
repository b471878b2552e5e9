"""What every comparison of learners shares, whichever family: confidence intervals and CSV rows.

A comparison runs learners x seeds on the same settings and reports, per learner, the mean
of each final metric with the half-width of its 95% Student-t confidence interval over
seeds (:func:`mean_ci`). The meta family's comparison is :mod:`algorithms.meta.compare`.

>>> mean_ci([1.0, 1.0])
{'mean': 1.0, 'ci95': 0.0, 'n': 2}
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats


def mean_ci(values: list[float]) -> dict[str, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (0 for one value)."""
    values_array = np.asarray(values, dtype=float)
    n = len(values_array)
    half = 0.0
    if n > 1:
        half = float(stats.t.ppf(0.975, n - 1) * values_array.std(ddof=1) / np.sqrt(n))
    return {"mean": float(values_array.mean()), "ci95": half, "n": n}


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as a CSV file whose columns are every key of any row, in first-seen order."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
