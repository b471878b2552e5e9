"""The comparison harness's figures (matplotlib, written to files).

Every function takes the rows that :func:`algorithms.meta.compare.compare` collects: ``curves``
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

from algorithms.core.figures import fitted_range
from deliberation_env.meta.spaces import ACTION_NAMES

METRIC = "eval/consensus_accuracy"
MARKERS = ("o", "s", "^", "D", "v", "P")
LINE_STYLES = ("-", "--", "-.", ":")
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


def reference_levels(baseline_rows: Rows) -> dict[str, float]:
    """The best heuristic baseline's and the oracle's held-out consensus accuracy (the
    horizontal lines of the learning curves)."""
    baseline = {
        name: float(np.mean([r[METRIC] for r in baseline_rows if r["algo"] == name]))
        for name in dict.fromkeys(r["algo"] for r in baseline_rows)
    }
    best = max((name for name in baseline if name != "oracle"), key=baseline.get, default=None)
    return {name: baseline[name] for name in (best, "oracle") if name in baseline}


def learning_curves(curves: Rows, baseline_rows: Rows, path: Path) -> None:
    """Held-out consensus accuracy vs training episodes, mean and 95% band over seeds, per
    scale; the best heuristic and the oracle as lines; the y axis fitted to all of them and
    one legend beside the panels."""
    series = _series(curves, METRIC)
    scales = sorted({scale for _, scale in series})
    algos = sorted({algo for algo, _ in series})
    colour = {algo: f"C{k}" for k, algo in enumerate(algos)}
    # hollow markers of their own shape and dash patterns: equal curves stay told apart
    style = {algo: {"marker": MARKERS[k % len(MARKERS)], "ls": LINE_STYLES[k % len(LINE_STYLES)]} for k, algo in enumerate(algos)}
    fig, axes = plt.subplots(
        1, len(scales), figsize=(5.0 * len(scales), 4), squeeze=False, sharey=True
    )
    references = reference_levels(baseline_rows)
    drawn = [np.array(list(references.values()))]
    for ax, scale in zip(axes[0], scales, strict=True):
        for (algo, s), (episodes, values) in sorted(series.items()):
            if s == scale:
                mean, half = _band(values)
                ax.plot(episodes, mean, color=colour[algo], markerfacecolor="none", label=algo, **style[algo])
                ax.fill_between(episodes, mean - half, mean + half, color=colour[algo], alpha=0.2)
                drawn += [mean - half, mean + half]
        for name, value in references.items():
            ax.axhline(value, color="k", lw=1, ls=":" if name == "oracle" else "--", label=f"{name} (baseline)")
        ax.set(title=f"reward scale x{scale:g}", xlabel="training episodes")
        ax.grid(alpha=0.3)
    axes[0][0].set(ylabel="held-out consensus accuracy", ylim=fitted_range(drawn))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
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
    """Training shares of PERSIST / REFINE / CONCEDE per learner at one reward scale (the
    one closest to 1), which the title names."""
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
            ax.plot(episodes, mean, color=f"C{k}", marker="o", markersize=3, label=action)  # one update: a point
            ax.fill_between(episodes, mean - half, mean + half, color=f"C{k}", alpha=0.2)
        ax.set(title=f"{algo}, reward scale x{scale:g}", xlabel="training episodes", ylabel="share of actions",
               ylim=(0, 1))  # fmt: skip
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Actions taken in training, at reward scale x{scale:g}", fontsize=10)
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
