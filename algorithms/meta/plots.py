"""Matplotlib figures of evaluation results (written to files; no screen needed)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from algorithms.meta.evaluate import EvalResult

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
"""One marker per policy, so that lines drawn on top of each other stay told apart."""
DASHES = ((4, 2), (1, 1.5), (6, 2, 1, 2), (3, 1, 1, 1, 1, 1), (8, 3))
"""The dash patterns of the mean individual accuracy lines, one per policy."""
X_OFFSET = 0.05
"""How far apart, in rounds, neighbouring policies' points are drawn (so equal values do
not hide each other)."""
FINGERPRINT = re.compile(r"@sha256:[0-9a-f]+")


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
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
    fig, (ax, ax_count) = plt.subplots(2, 1, figsize=(5.2, 5.6), sharex=True, height_ratios=(3, 1))
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
