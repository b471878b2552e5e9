"""Matplotlib figures of evaluation results (written to files; no screen needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from algorithms.meta.evaluate import EvalResult


def accuracy_per_round(results: Sequence[EvalResult], path: Path, title: str) -> Path:
    """Individual (dashed) and consensus (solid) accuracy per round, one colour per policy."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k, result in enumerate(results):
        colour = f"C{k}"
        rounds = np.arange(len(result.accuracy))
        ax.plot(rounds, result.consensus_accuracy, "-o", color=colour, label=f"{result.policy} (consensus)")
        ax.plot(rounds, result.accuracy, "--", color=colour, alpha=0.6)
    ax.set(xlabel="round", ylabel="accuracy", ylim=(-0.02, 1.02))
    ax.set_title(title, fontsize=9)
    ax.set_xticks(np.arange(len(results[0].accuracy)))
    ax.legend(fontsize=8, title="dashed: mean individual", title_fontsize=8)
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
