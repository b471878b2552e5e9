"""The meta family's figures, written to files (no screen needed; importing this module
leaves matplotlib's backend as it was: see :mod:`algorithms.core.figures`).

**Evaluation** (``deliberate run``): :func:`accuracy_per_round` and
:func:`reliability_diagram` of :class:`~algorithms.meta.evaluate.EvalResult` rows.

**Comparison** (``deliberate compare``, :func:`write_comparison`): every function takes the
rows that :func:`algorithms.meta.compare.compare` collects: ``curves`` (one per logged
record of every run, tagged ``algo``, ``reward_scale``, ``seed``), ``finals`` (final
held-out metrics per run) and ``baseline_rows``. Accuracies and shares are drawn with the
mean over seeds and its 95% band, clipped to [0, 1] (:func:`algorithms.core.figures.band`);
a reward scale is named only where the comparison ran more than one.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from algorithms.core.compare import CURVES_FIGURE, FINAL_FIGURE
from algorithms.core.figures import band, final_bars, fitted_range, new_figure, write_figure
from algorithms.meta.evaluate import EvalResult
from deliberation_env.meta.spaces import ACTION_NAMES

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
"""One marker per policy, so that lines drawn on top of each other stay told apart."""
DASHES = ((4, 2), (1, 1.5), (6, 2, 1, 2), (3, 1, 1, 1, 1, 1), (8, 3))
"""The dash patterns of the mean individual accuracy lines, one per policy."""
X_OFFSET = 0.05
"""How far apart, in rounds, neighbouring policies' points are drawn (so equal values do
not hide each other)."""
FINGERPRINT = re.compile(r"@sha256:[0-9a-f]+")
METRIC = "eval/consensus_accuracy"
"""The comparison's held-out metric."""
LINE_STYLES = ("-", "--", "-.", ":")
Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class RoundLine:
    """One policy's accuracy per round, as :func:`accuracy_per_round` draws it.

    Attributes:
        label: The legend's label.
        rounds: x positions: the rounds, shifted by the policy's small offset.
        consensus: Plurality consensus accuracy per round (the solid line).
        individual: Mean individual accuracy per round (the dashed line).
        marker: The policy's marker.
        dashes: The dash pattern of its individual line.
    """

    label: str
    rounds: np.ndarray
    consensus: list[float]
    individual: list[float]
    marker: str
    dashes: tuple[float, ...]


@dataclass(frozen=True)
class MatchedLine:
    """A compute-matched row (single agent, self-consistency k), drawn across all rounds at
    its final consensus accuracy: it spends its tokens at once, not round by round."""

    label: str
    accuracy: float


def round_lines(results: Sequence[EvalResult]) -> list[RoundLine]:
    """The team policies' lines: a marker, a dash pattern and an x offset each, centred on the rounds."""
    centre = (len(results) - 1) / 2
    return [
        RoundLine(
            label=result.policy,
            rounds=np.arange(len(result.accuracy)) + (k - centre) * X_OFFSET,
            consensus=list(result.consensus_accuracy),
            individual=list(result.accuracy),
            marker=MARKERS[k % len(MARKERS)],
            dashes=DASHES[k % len(DASHES)],
        )
        for k, result in enumerate(results)
    ]


def matched_lines(matched: Sequence[EvalResult]) -> list[MatchedLine]:
    """The compute-matched rows' reference lines, labelled with their tokens per problem."""
    return [
        MatchedLine(f"{result.policy} ({result.tokens_per_problem:,.0f} tok/problem)", result.consensus_accuracy[-1])
        for result in matched
    ]


def readable_title(title: str, width: int = 70) -> str:
    """``title`` without model fingerprints, ``backend:model`` written ``model (backend)``
    (a simulated team's settings in parentheses), wrapped at ``width`` characters.

    >>> readable_title("3 x ctranslate2:SmolLM2-135M-Instruct-Q4_1-int8-7bit@sha256:0a1b on arithmetic")
    '3 x SmolLM2-135M-Instruct-Q4_1-int8-7bit (ctranslate2) on arithmetic'
    """
    plain = FINGERPRINT.sub("", title)
    plain = re.sub(r"\b([a-z0-9_]+):(\S+)", _model_then_backend, plain)
    return "\n".join(textwrap.wrap(plain.replace(",", ", "), width))


def _model_then_backend(match: re.Match[str]) -> str:
    """``model (backend)`` of a ``backend:model`` match; ``backend (settings)`` where the
    model part is settings (``simulated:skill=0.8,calibration=1.5``)."""
    backend, model = match[1], match[2]
    return f"{backend} ({model})" if "=" in model else f"{model} ({backend})"


def subtitle(results: Sequence[EvalResult], split: str) -> str:
    """What the figure was measured on: the split (held-out for test) and the problems."""
    where = "held-out problems (test split)" if split == "test" else f"problems of the {split} split"
    return f"{results[0].n_problems} {where}, one episode each"


def accuracy_per_round(
    results: Sequence[EvalResult],
    path: Path,
    title: str,
    matched: Sequence[EvalResult] = (),
    split: str = "test",
) -> Path:
    """Consensus (solid, one marker per policy) and mean individual (dashed) accuracy per
    round, one colour per policy, neighbouring policies a little apart; the compute-matched
    rows as horizontal lines; the team and task as the title, the problems as a subtitle.

    Args:
        results: The team policies' results.
        path: The PNG to write.
        title: The team and task (model fingerprints are dropped, see :func:`readable_title`).
        matched: The compute-matched rows (:func:`algorithms.meta.compute_matched.compute_matched`).
        split: The evaluated split (``test``: held-out).
    """
    fig = new_figure(figsize=(7.6, 4.6))
    ax = fig.subplots()
    for k, line in enumerate(round_lines(results)):
        colour = f"C{k}"
        ax.plot(line.rounds, line.consensus, "-", marker=line.marker, color=colour, label=f"{line.label} (consensus)")
        ax.plot(line.rounds, line.individual, color=colour, alpha=0.6, dashes=line.dashes, marker=line.marker,
                markersize=3, markerfacecolor="none")  # fmt: skip
    for k, line in enumerate(matched_lines(matched)):
        ax.axhline(line.accuracy, color="k", lw=1.2, ls=(":", "-.")[k % 2], label=line.label)
    values = [v for r in [*results, *matched] for v in (*r.accuracy, *r.consensus_accuracy)]
    low, high = min(values), max(values)
    margin = max(0.05, 0.1 * (high - low))
    ax.set(xlabel="round", ylabel="accuracy", ylim=(max(-0.02, low - margin), min(1.02, high + margin)))
    ax.set_xticks(np.arange(len(results[0].accuracy)))
    ax.set_title(f"{readable_title(title)}\n{subtitle(results, split)}", fontsize=9)
    ax.legend(fontsize=8, title="dashed: mean individual", title_fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))  # fmt: skip
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return write_figure(fig, path)


def reliability_diagram(results: Sequence[EvalResult], path: Path, title: str, bins: int = 10) -> Path:
    """Empirical accuracy against introspective confidence, pooled over policies and rounds."""
    conf = np.concatenate([np.asarray(r.confidence) for r in results])
    correct = np.concatenate([np.asarray(r.correct, dtype=float) for r in results])
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(conf, edges) - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    accuracy = np.bincount(which, weights=correct, minlength=bins) / np.maximum(counts, 1)
    mean_conf = np.bincount(which, weights=conf, minlength=bins) / np.maximum(counts, 1)
    ece = float(np.sum(counts * np.abs(accuracy - mean_conf)) / max(counts.sum(), 1))
    fig = new_figure(figsize=(5.2, 5.6))
    ax, ax_count = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    centres = (edges[:-1] + edges[1:]) / 2
    filled = counts > 0
    ax.bar(centres[filled], accuracy[filled], width=1.0 / bins, edgecolor="k", alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], "k--", label="perfect calibration")
    ax.set(ylabel="empirical accuracy", ylim=(0, 1))
    ax.set_title(f"{title}\nECE = {ece:.3f}, n = {counts.sum()}", fontsize=9)
    ax.legend(fontsize=8)
    ax_count.bar(centres, counts, width=1.0 / bins, edgecolor="k", color="C7")
    ax_count.set(xlabel="introspective confidence z_conf", ylabel="answers", xlim=(0, 1))
    fig.tight_layout()
    return write_figure(fig, path)


# ---------------------------------------------------------------- the comparison's figures
def _series(curves: Rows, metric: str) -> dict[tuple[str, float], tuple[np.ndarray, np.ndarray]]:
    """(algo, scale) -> (episodes, values (seeds, points)) of the records that hold ``metric``."""
    runs: dict[tuple[str, float], dict[int, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in curves:
        if metric in row:
            runs[(row["algo"], row["reward_scale"])][row["seed"]].append((row["episodes"], row[metric]))
    series = {}
    for key, seeds in runs.items():
        # Runs of one key share their evaluation schedule; a run cut short is truncated.
        length = min(len(points) for points in seeds.values())
        episodes = np.array([e for e, _ in next(iter(seeds.values()))[:length]])
        series[key] = (episodes, np.array([[v for _, v in points[:length]] for points in seeds.values()]))
    return series


def _reference_scale(finals: Rows) -> float:
    """The reward scale closest to 1 (for the figures drawn at one scale)."""
    return min({row["reward_scale"] for row in finals}, key=lambda s: abs(np.log(s)))


def _at_scale(finals: Rows, scale: float) -> str:
    """`` (learners at reward scale xS)`` where the comparison ran several scales, else nothing."""
    return f" (learners at reward scale x{scale:g})" if len({row["reward_scale"] for row in finals}) > 1 else ""


def reference_levels(baseline_rows: Rows) -> dict[str, float]:
    """The best heuristic baseline's and the oracle's held-out consensus accuracy (the
    horizontal lines of the learning curves)."""
    baseline = {
        name: float(np.mean([r[METRIC] for r in baseline_rows if r["algo"] == name]))
        for name in dict.fromkeys(r["algo"] for r in baseline_rows)
    }
    best = max((name for name in baseline if name != "oracle"), key=baseline.get, default=None)
    return {name: baseline[name] for name in (best, "oracle") if name in baseline}


def comparison_curves(curves: Rows, baseline_rows: Rows) -> Figure:
    """Held-out consensus accuracy vs training episodes, mean and 95% band over seeds, one
    panel per reward scale (titled with it where there are several); the best heuristic and
    the oracle as lines; the y axis fitted to all of them and one legend beside the panels."""
    series = _series(curves, METRIC)
    scales = sorted({scale for _, scale in series})
    algos = sorted({algo for algo, _ in series})
    colour = {algo: f"C{k}" for k, algo in enumerate(algos)}
    # hollow markers of their own shape and dash patterns: equal curves stay told apart
    style = {algo: {"marker": MARKERS[k % len(MARKERS)], "ls": LINE_STYLES[k % len(LINE_STYLES)]} for k, algo in enumerate(algos)}
    fig = new_figure(figsize=(5.0 * len(scales), 4))
    axes = fig.subplots(1, len(scales), squeeze=False, sharey=True)[0]
    references = reference_levels(baseline_rows)
    drawn = [np.array(list(references.values()))]
    for ax, scale in zip(axes, scales, strict=True):
        for (algo, s), (episodes, values) in sorted(series.items()):
            if s == scale:
                seeds = band(values)
                ax.plot(episodes, seeds.mean, color=colour[algo], markerfacecolor="none", label=algo, **style[algo])
                ax.fill_between(episodes, seeds.low, seeds.high, color=colour[algo], alpha=0.2)
                drawn += [seeds.low, seeds.high]
        for name, value in references.items():
            ax.axhline(value, color="k", lw=1, ls=":" if name == "oracle" else "--", label=f"{name} (baseline)")
        ax.set(title=f"reward scale x{scale:g}" if len(scales) > 1 else "", xlabel="training episodes")
        ax.grid(alpha=0.3)
    axes[0].set(ylabel="held-out consensus accuracy", ylim=fitted_range(drawn))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def final_accuracy(finals: Rows, baseline_rows: Rows) -> Figure:
    """Final held-out consensus accuracy per learner (at the scale closest to 1) and
    baseline (:func:`~algorithms.core.figures.final_bars`)."""
    scale = _reference_scale(finals)
    groups: dict[str, list[float]] = defaultdict(list)
    for row in finals:
        if row["reward_scale"] == scale:
            groups[row["algo"]].append(row[METRIC])
    for row in baseline_rows:
        groups[row["algo"]].append(row[METRIC])
    learners = {row["algo"] for row in finals}
    return final_bars(groups, learners, "held-out consensus accuracy", f"final accuracy{_at_scale(finals, scale)}")


def action_shares(curves: Rows, finals: Rows) -> Figure | None:
    """Training shares of PERSIST / REFINE / CONCEDE per learner at one reward scale (the
    one closest to 1, named in the title where the comparison ran several), mean and 95%
    band over seeds; None when no learner logged them (``actions/*_share``: the shipped
    learners do, one's own need not; the title names those left out, so that a missing
    panel is not read as a learner that took no action)."""
    scale = _reference_scale(finals)
    per_action = {a: _series(curves, f"actions/{a}_share") for a in ACTION_NAMES}
    algos = sorted({algo for algo, s in per_action["persist"] if s == scale})
    if not algos:
        return None
    unlogged = sorted({row["algo"] for row in finals if row["reward_scale"] == scale} - set(algos))
    fig = new_figure(figsize=(4.5 * len(algos), 3.6))
    axes = fig.subplots(1, len(algos), squeeze=False, sharey=True)[0]
    for ax, algo in zip(axes, algos, strict=True):
        for k, action in enumerate(ACTION_NAMES):
            episodes, values = per_action[action][(algo, scale)]
            seeds = band(values)
            ax.plot(episodes, seeds.mean, color=f"C{k}", marker="o", markersize=3, label=action)  # one update: a point
            ax.fill_between(episodes, seeds.low, seeds.high, color=f"C{k}", alpha=0.2)
        ax.set(title=algo, xlabel="training episodes", ylabel="share of actions", ylim=(0, 1))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    left_out = f"\nnot shown: {', '.join(unlogged)} (logs no actions/*_share)" if unlogged else ""
    fig.suptitle(f"Actions taken in training{_at_scale(finals, scale)}{left_out}", fontsize=10)
    fig.tight_layout()
    return fig


def reward_scale(finals: Rows) -> Figure:
    """Final held-out consensus accuracy vs reward scale per learner, 95% CIs clipped to
    [0, 1] (the ablation)."""
    groups: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in finals:
        groups[row["algo"]][row["reward_scale"]].append(row[METRIC])
    fig = new_figure(figsize=(5.5, 4))
    ax = fig.subplots()
    for algo, by_scale in sorted(groups.items()):
        scales = sorted(by_scale)
        bands = [band(np.array(by_scale[s])) for s in scales]
        errors = np.stack([b.errors() for b in bands], axis=1)
        ax.errorbar(scales, [b.mean for b in bands], yerr=errors, marker="o", capsize=4, label=algo)
    ax.set(xscale="log", xlabel="reward scale", ylabel="final held-out consensus accuracy", title="reward-scale ablation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def write_comparison(out_dir: Path, curves: Rows, finals: Rows, baseline_rows: Rows) -> list[Path]:
    """Write the figures of a comparison into ``out_dir`` (four; three when no learner
    logged its action shares) and return their paths."""
    written = [
        write_figure(comparison_curves(curves, baseline_rows), out_dir / CURVES_FIGURE, bbox_inches="tight"),
        write_figure(final_accuracy(finals, baseline_rows), out_dir / FINAL_FIGURE),
    ]
    shares = action_shares(curves, finals)
    if shares is not None:
        written.append(write_figure(shares, out_dir / "action_shares.png"))
    return [*written, write_figure(reward_scale(finals), out_dir / "reward_scale.png")]
