"""The compare harness of both families: learners x seeds, confidence intervals, table, CSV.

A comparison runs every learner for every seed on the same settings (:func:`run_grid`,
with a per-seed setup such as a shared warm start where the family needs one)
and reports, per learner, the mean of each final metric with the half-width of its 95%
Student-t confidence interval over seeds (:func:`mean_ci`, :func:`summarize_runs`), as a
table (:func:`summary_table`) and as files (:func:`write_csv`). The meta family's
comparison (:mod:`algorithms.meta.compare`) adds warm starts, reward scales, baselines
and learning-curve plots; the text family's is ``deliberate compare text`` (:mod:`algorithms.commands.compare`).

>>> mean_ci([1.0, 1.0])
{'mean': 1.0, 'ci95': 0.0, 'n': 2}
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table
from scipy import stats


def mean_ci(values: list[float]) -> dict[str, float]:
    """Mean and the half-width of its 95% Student-t confidence interval,
    mean +- t_{0.975, n-1} s / sqrt(n) (``ci95`` 0 for one value, where it is undefined:
    ``n`` says so, and :func:`mean_and_interval` prints no interval)."""
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


def run_grid(
    train: Callable[[Any, int], Mapping[str, Any]],
    algos: Sequence[Any],
    seeds: int,
    setup_seed: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """``train(algo, seed)`` for every algorithm and seed 0 .. seeds-1, the loop of both
    families' comparisons; one row per run: ``algo``, ``seed`` and what ``train`` returned.

    Args:
        train: Runs one learner at one seed; its final metrics.
        algos: The learners' names (or any labels, e.g. (reward scale, name) pairs).
        seeds: How many seeds each learner runs.
        setup_seed: What a seed's runs share, built before them (e.g. an SFT warm start).
            Without it the runs go learner by learner (every seed of the first, then the
            next); with it, seed by seed, each after its ``setup_seed(seed)``.

    Returns:
        The rows, in the order of the runs.
    """

    def run(algo: Any, seed: int) -> dict[str, Any]:
        return {"algo": algo, "seed": seed, **train(algo, seed)}

    if setup_seed is None:
        return [run(algo, seed) for algo in algos for seed in range(seeds)]
    rows = []
    for seed in range(seeds):
        setup_seed(seed)
        rows.extend(run(algo, seed) for algo in algos)
    return rows


def summarize_runs(runs: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """:func:`mean_ci` over ``runs`` (one learner's seeds) of each of ``metrics`` that every run has.

    >>> summarize_runs([{"a": 1.0, "b": 2.0}, {"a": 3.0}], ["a", "b"])["a"]["mean"]
    2.0
    """
    return {metric: mean_ci([run[metric] for run in runs]) for metric in metrics if all(metric in run for run in runs)}


def mean_and_interval(stat: Mapping[str, float]) -> str:
    """A :func:`mean_ci` as text: ``mean +- half-width``; one seed has no interval (its
    ``ci95`` of 0 is a placeholder), so its mean stands alone, marked.

    >>> mean_and_interval(mean_ci([0.4, 0.6])), mean_and_interval(mean_ci([0.415]))
    ('0.500 +- 1.271', '0.415 (1 seed)')
    """
    if stat["n"] < 2:
        return f"{stat['mean']:.3f} (1 seed)"
    return f"{stat['mean']:.3f} +- {stat['ci95']:.3f}"


def summary_table(summary: Mapping[str, Mapping[str, Mapping[str, float]]], metrics: Sequence[str], title: str) -> Table:
    """A table of ``summary`` (learner -> metric -> :func:`mean_ci`): mean +- 95% CI
    (:func:`mean_and_interval`), a column per metric that any learner has ("-" where one lacks it)."""
    columns = [m for m in metrics if any(m in row for row in summary.values())]
    table = Table(title=title)
    table.add_column("algo")
    for metric in columns:
        table.add_column(metric, justify="right")
    for algo, row in summary.items():
        table.add_row(algo, *(mean_and_interval(row[m]) if m in row else "-" for m in columns))
    return table
