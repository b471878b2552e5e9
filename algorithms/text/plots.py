"""The text family's figures, written to files (no screen needed; importing this module
leaves matplotlib's backend as it was: see :mod:`algorithms.core.figures`).

**Learning curves** (``train text``, ``compare text``).

A learner's history (``TrainResult.history``, or the lines of ``metrics.jsonl``) holds one
record per update: the training reward ``rewards/joint/mean`` and, every ``eval_interval``
updates, the held-out greedy evaluation's ``eval/...`` metrics
(:func:`algorithms.text.evaluate`). :func:`curve` reads both
from a history; :func:`learning_curves` draws the training reward per update (each seed
thin, the mean thick) with the held-out joint reward as points on the curves, the same
quantity scored greedily on problems never trained on.

**A comparison's figures** (``compare text``, :func:`write_comparison`): the learning
curves and each learner's final accuracy (held-out where the runs evaluated, else the last
update's training accuracy) with its 95% CI, as :mod:`algorithms.core.compare` names them.

**Coding baselines** (``run text``): :func:`reward_parts`, each baseline's weighted reward
parts stacked (:func:`algorithms.text.eval.evaluate_baselines`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from algorithms.core.compare import CURVES_FIGURE, FINAL_FIGURE
from algorithms.core.figures import SHARE, final_bars, fitted_range, new_figure, write_figure
from deliberation_env.text.protocols.coding import WEIGHTS

REWARD = "rewards/joint/mean"
"""The training reward of a curve: the joint reward, mean over the update's episodes."""
HELD_OUT = "eval/joint"
"""The held-out metric drawn as points: the same joint reward, greedy, on the test split."""
FINAL = {
    "eval/correct": "held-out accuracy (greedy)",
    "eval/pass_rate": "held-out pass rate (greedy, every test passed)",
    "rewards/correct/mean": "training accuracy, last update",
    "eval/joint": "held-out joint reward (greedy)",
    "rewards/joint/mean": "training joint reward, last update",
}
"""A comparison's final result, the first that every run has: accuracy where the protocol
scores one (math) or the pass rate (coding), held-out where the runs evaluated, else the
joint reward."""

History = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Curve:
    """One run's training curve and its periodic held-out evaluations.

    Attributes:
        updates: The update of each training record (1, 2, ...).
        rewards: Its training reward.
        eval_updates: The updates after which the held-out evaluation ran.
        eval_values: Its held-out value at each of them.
    """

    updates: np.ndarray
    rewards: np.ndarray
    eval_updates: np.ndarray
    eval_values: np.ndarray


def curve(history: History, reward: str = REWARD, held_out: str = HELD_OUT) -> Curve:
    """The training curve of ``history`` (records that hold ``reward``) and its held-out points
    (records that hold ``held_out``: a ``metrics.jsonl`` also has the evaluation before
    training, at update 0).

    >>> c = curve([{"charts/update": 1, "rewards/joint/mean": 0.2},
    ...            {"charts/update": 2, "rewards/joint/mean": 0.4, "eval/joint": 0.3}])
    >>> c.eval_updates.tolist(), c.eval_values.tolist()
    ([2.0], [0.3])
    """
    trained = [record for record in history if reward in record]
    evaluated = [record for record in history if held_out in record]
    return Curve(
        updates=np.array([record["charts/update"] for record in trained], dtype=float),
        rewards=np.array([record[reward] for record in trained], dtype=float),
        eval_updates=np.array([record.get("charts/update", record.get("step")) for record in evaluated], dtype=float),
        eval_values=np.array([record[held_out] for record in evaluated], dtype=float),
    )


def learning_curves(
    runs: Mapping[str, Sequence[History]], path: Path, title: str, held_out: str = HELD_OUT
) -> Path:
    """Write the figure of :func:`draw_curves` to ``path``.

    Args:
        runs: Per learner, the histories of its seeds.
        path: The PNG to write.
        title: The figure's title (team, task, scoring).
        held_out: The ``eval/...`` metric drawn as points.
    """
    fig = new_figure(figsize=(7.6, 4.2))
    ax = fig.subplots()
    draw_curves(ax, runs, held_out)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves, over none
    fig.tight_layout()
    return write_figure(fig, path, bbox_inches="tight")


def draw_curves(ax: Axes, runs: Mapping[str, Sequence[History]], held_out: str = HELD_OUT) -> None:
    """Training reward per update per learner (seeds thin, their mean thick) and the
    held-out evaluations as points on the curves (hollow markers: each seed's; filled: their
    mean where every seed evaluated), labelled for a legend; the y axis fitted to the data."""
    drawn: list[np.ndarray] = []
    for k, (name, histories) in enumerate(runs.items()):
        colour = f"C{k}"
        curves = [curve(history, held_out=held_out) for history in histories]
        length = min(len(c.updates) for c in curves)
        for c in curves:
            ax.plot(c.updates, c.rewards, color=colour, alpha=0.3, lw=1)
            ax.plot(c.eval_updates, c.eval_values, "o", color=colour, markerfacecolor="none", markersize=5)
            drawn += [c.rewards, c.eval_values]
        mean = np.mean([c.rewards[:length] for c in curves], axis=0)
        ax.plot(curves[0].updates[:length], mean, color=colour, lw=2.5, label=f"{name}, training ({len(curves)} seed{'s' if len(curves) > 1 else ''})")
        shared = _shared_evaluations(curves)
        if shared is not None:
            ax.plot(*shared, "o", color=colour, markersize=7, markeredgecolor="k", label=f"{name}, held-out (greedy)")
    ax.set(xlabel="update", ylabel="joint reward", ylim=fitted_range(drawn, limits=None))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # updates are whole: no tick at 1.5
    ax.grid(alpha=0.3)


def _shared_evaluations(curves: Sequence[Curve]) -> tuple[np.ndarray, np.ndarray] | None:
    """The updates at which every seed evaluated, with the seeds' mean there; None if none."""
    common = sorted(set.intersection(*(set(c.eval_updates.tolist()) for c in curves)))
    if not common:
        return None
    means = [np.mean([c.eval_values[c.eval_updates == u][0] for c in curves]) for u in common]
    return np.array(common), np.array(means)


def final_accuracy(finals: Sequence[Mapping[str, Any]]) -> Figure:
    """Each learner's final result over its seeds (``finals``: one row per run, with
    ``algo``), the first of :data:`FINAL` that every run has
    (:func:`~algorithms.core.figures.final_bars`; a reward's intervals are not clipped to [0, 1])."""
    metric = next(name for name in FINAL if all(name in row for row in finals))
    groups: dict[str, list[float]] = {}
    for row in finals:
        groups.setdefault(row["algo"], []).append(row[metric])
    limits = None if metric.endswith(("joint", "joint/mean")) else SHARE
    return final_bars(groups, set(groups), FINAL[metric], "final result: mean and 95% CI over seeds", limits)


def write_comparison(
    out_dir: Path, runs: Mapping[str, Sequence[History]], finals: Sequence[Mapping[str, Any]], title: str
) -> list[Path]:
    """Write a comparison's figures into ``out_dir`` (``runs``: per learner, its seeds'
    histories; ``finals``: one row per run; ``title``: the learning curves') and return their paths."""
    return [
        learning_curves(runs, out_dir / CURVES_FIGURE, title),
        write_figure(final_accuracy(finals), out_dir / FINAL_FIGURE),
    ]


def reward_parts(summaries: Sequence[Mapping[str, Any]], path: Path, title: str) -> Path:
    """Each baseline's mean weighted reward parts, stacked (the bar's height is R), written
    to ``path``; ``summaries`` as :func:`algorithms.text.eval.summarize_baseline` returns them."""
    fig = new_figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    names = [s["baseline"] for s in summaries]
    bottom = np.zeros(len(summaries))
    for k, (part, weight) in enumerate(WEIGHTS.items()):
        values = np.array([weight * s["parts"][part] for s in summaries])
        ax.bar(names, values, bottom=bottom if weight > 0 else None, color=f"C{k}", label=f"{part} (x{weight:g})")
        bottom += np.clip(values, 0, None)
    most = sum(weight for weight in WEIGHTS.values() if weight > 0)
    ax.set(ylabel="mean reward part", ylim=(-0.6, most + 0.1))
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return write_figure(fig, path)
