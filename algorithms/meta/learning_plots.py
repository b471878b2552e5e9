"""The comparison harness's figures (matplotlib, written to files).

Every function takes the rows that :func:`algorithms.harness.compare` collects: ``curves``
(one per logged record of every run, tagged ``algo``, ``reward_scale``, ``seed``),
``finals`` (final held-out metrics per run) and ``baseline_rows``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from deliberation_env.meta.spaces import ACTION_NAMES

METRIC = "eval/consensus_accuracy"
Rows = list[dict[str, Any]]


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) and the 95% Student-t half-width (0 for one seed)."""
    mean = values.mean(axis=0)
    if len(values) < 2:
        return mean, np.zeros_like(mean)
    return mean, stats.t.ppf(0.975, len(values) - 1) * values.std(axis=0, ddof=1) / np.sqrt(
        len(values)
    )


def _series(curves: Rows, metric: str) -> dict[tuple[str, float], tuple[np.ndarray, np.ndarray]]:
    """(algo, scale) -> (episodes, values (seeds, points)) of the records that hold ``metric``."""
    runs: dict[tuple[str, float], dict[int, list[tuple[int, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for row in curves:
        if metric in row:
            runs[(row["algo"], row["reward_scale"])][row["seed"]].append(
                (row["episodes"], row[metric])
            )
    series = {}
    for key, seeds in runs.items():
        # Runs of one key share their evaluation schedule; a run cut short is truncated.
        length = min(len(points) for points in seeds.values())
        episodes = np.array([e for e, _ in next(iter(seeds.values()))[:length]])
        series[key] = (
            episodes,
            np.array([[v for _, v in points[:length]] for points in seeds.values()]),
        )
    return series


def _reference_scale(finals: Rows) -> float:
    """The reward scale closest to 1 (for the figures drawn at one scale)."""
    return min({row["reward_scale"] for row in finals}, key=lambda s: abs(np.log(s)))


def learning_curves(curves: Rows, baseline_rows: Rows, path: Path) -> None:
    """Held-out consensus accuracy vs training episodes, mean and 95% band over seeds, per scale."""
    series = _series(curves, METRIC)
    scales = sorted({scale for _, scale in series})
    colour = {algo: f"C{k}" for k, algo in enumerate(sorted({algo for algo, _ in series}))}
    fig, axes = plt.subplots(
        1, len(scales), figsize=(5.5 * len(scales), 4), squeeze=False, sharey=True
    )
    baseline = {
        name: np.mean([r[METRIC] for r in baseline_rows if r["algo"] == name])
        for name in dict.fromkeys(r["algo"] for r in baseline_rows)
    }
    best = max((name for name in baseline if name != "oracle"), key=baseline.get, default=None)
    references = {name: baseline[name] for name in (best, "oracle") if name in baseline}
    for ax, scale in zip(axes[0], scales, strict=True):
        for (algo, s), (episodes, values) in sorted(series.items()):
            if s == scale:
                mean, half = _band(values)
                ax.plot(episodes, mean, color=colour[algo], label=algo)
                ax.fill_between(
                    episodes,
                    np.clip(mean - half, 0, 1),
                    np.clip(mean + half, 0, 1),
                    color=colour[algo],
                    alpha=0.2,
                )
        for name, value in references.items():  # the best heuristic baseline and the oracle ceiling
            ax.axhline(value, color="k", lw=1, ls=":" if name == "oracle" else "--")
            ax.annotate(
                name,
                (1.0, value),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                ha="right",
                va="bottom",
            )
        ax.set(
            title=f"reward scale x{scale:g}",
            xlabel="training episodes",
            ylabel="held-out consensus accuracy",
            ylim=(0, 1.02),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def final_accuracy(finals: Rows, baseline_rows: Rows, path: Path) -> None:
    """Final held-out consensus accuracy per learner (scale closest to 1) and baseline, 95% CIs."""
    scale = _reference_scale(finals)
    groups: dict[str, list[float]] = defaultdict(list)
    for row in finals:
        if row["reward_scale"] == scale:
            groups[row["algo"]].append(row[METRIC])
    for row in baseline_rows:
        groups[row["algo"]].append(row[METRIC])
    names = list(groups)
    means, halves = zip(*(_band(np.array(groups[n])[:, None]) for n in names), strict=True)
    colours = ["C0" if n in {r["algo"] for r in finals} else "C7" for n in names]
    fig, ax = plt.subplots(figsize=(1.0 * len(names) + 2, 4))
    ax.bar(names, np.ravel(means), yerr=np.ravel(halves), color=colours, capsize=4)
    ax.set(
        ylabel="held-out consensus accuracy",
        title=f"final accuracy (learners at reward scale x{scale:g})",
        ylim=(0, 1),
    )
    ax.tick_params(axis="x", rotation=30)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def action_shares(curves: Rows, finals: Rows, path: Path) -> None:
    """Training shares of PERSIST / REFINE / CONCEDE per learner (scale closest to 1)."""
    scale = _reference_scale(finals)
    per_action = {a: _series(curves, f"actions/{a}_share") for a in ACTION_NAMES}
    algos = sorted({algo for algo, s in per_action["persist"] if s == scale})
    fig, axes = plt.subplots(
        1, len(algos), figsize=(4.5 * len(algos), 3.6), squeeze=False, sharey=True
    )
    for ax, algo in zip(axes[0], algos, strict=True):
        for k, action in enumerate(ACTION_NAMES):
            episodes, values = per_action[action][(algo, scale)]
            mean, half = _band(values)
            ax.plot(episodes, mean, color=f"C{k}", label=action)
            ax.fill_between(episodes, mean - half, mean + half, color=f"C{k}", alpha=0.2)
        ax.set(title=algo, xlabel="training episodes", ylabel="share of actions", ylim=(0, 1))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reward_scale(finals: Rows, path: Path) -> None:
    """Final held-out consensus accuracy vs reward scale per learner, 95% CIs (the ablation)."""
    groups: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in finals:
        groups[row["algo"]][row["reward_scale"]].append(row[METRIC])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for algo, by_scale in sorted(groups.items()):
        scales = sorted(by_scale)
        means, halves = zip(*(_band(np.array(by_scale[s])[:, None]) for s in scales), strict=True)
        ax.errorbar(
            scales, np.ravel(means), yerr=np.ravel(halves), marker="o", capsize=4, label=algo
        )
    ax.set(
        xscale="log",
        xlabel="reward scale",
        ylabel="final held-out consensus accuracy",
        title="reward-scale ablation",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_all(out_dir: Path, curves: Rows, finals: Rows, baseline_rows: Rows) -> None:
    """Write the four figures of a comparison into ``out_dir``."""
    learning_curves(curves, baseline_rows, out_dir / "learning_curves.png")
    final_accuracy(finals, baseline_rows, out_dir / "final_accuracy.png")
    action_shares(curves, finals, out_dir / "action_shares.png")
    reward_scale(finals, out_dir / "reward_scale.png")
