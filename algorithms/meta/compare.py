"""Optimizer comparisons: same env, same problems, same budget (``deliberate compare``).

``compare(CompareConfig(...))`` runs ``train`` for every algorithm x seed x reward scale
with the same env, problems, warm start and budget, evaluates the baselines of
:mod:`algorithms.meta.baselines` on the same held-out problems, and writes to ``out_dir``:

=========================  ============================================================
file                       content
=========================  ============================================================
``curves.csv``             one row per (reward scale, algorithm, seed, evaluation)
``final.csv``              final held-out metrics per run, then per baseline
``summary.json``           mean and 95% CI over seeds per (reward scale, algorithm), the
                           baselines, and the share of the best-heuristic-to-oracle gap
                           each learner closes
``learning_curves.png``    held-out consensus accuracy vs training episodes, 95% bands
``final_accuracy.png``     final held-out accuracy per algorithm with 95% CIs
``action_shares.png``      PERSIST / REFINE / CONCEDE shares over training
``reward_scale.png``       final accuracy vs reward scale per algorithm (the ablation)
=========================  ============================================================
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from algorithms.core.checkpoints import CHECKPOINT
from algorithms.core.compare import summarize_runs, write_csv
from algorithms.core.metrics import read_metrics
from algorithms.core.run_dirs import new_run_dir, open_run_dir
from algorithms.meta import baselines, learning_plots
from algorithms.meta.config import COMPARE_RESUMABLE, CompareConfig
from algorithms.meta.train import EVAL_BATCH, held_out, train
from deliberation_env.factory import vector_env_from


def compare(cfg: CompareConfig) -> dict[str, Any]:
    """Run the comparison, write its files (see the module docstring) and return the summary."""
    if not cfg.out_dir:
        cfg = dataclasses.replace(cfg, out_dir=str(new_run_dir("compare", "meta", "+".join(cfg.algos))))
    out_dir = open_run_dir(cfg.out_dir, dataclasses.asdict(cfg), cfg.train.resume, COMPARE_RESUMABLE)
    learners = [a for a in cfg.algos if a != "sft"]
    runs = cfg.seeds * (len(cfg.reward_scales) * len(learners) + bool(cfg.train.sft_updates))
    curves: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    with tqdm(total=runs, desc="compare", unit="run", disable=not cfg.train.progress) as bar:
        for seed in range(cfg.seeds):
            warm_start = cfg.train.warm_start
            if cfg.train.sft_updates and not warm_start:
                run_dir = out_dir / "sft" / f"seed{seed}"
                final = train(
                    dataclasses.replace(
                        cfg.train,
                        algo="sft",
                        updates=cfg.train.sft_updates,
                        seed=seed,
                        run_dir=str(run_dir),
                        progress=False,
                    )
                )
                warm_start = str(run_dir / CHECKPOINT)
                if "sft" in cfg.algos:
                    for scale in cfg.reward_scales:  # the warm start is the same at every scale
                        _collect(curves, finals, run_dir, final, "sft", scale, seed)
                bar.update()
            for scale in cfg.reward_scales:
                env = dataclasses.replace(cfg.train.env, reward_scale=scale)
                for algo in learners:
                    run_dir = out_dir / f"scale{scale:g}" / algo / f"seed{seed}"
                    final = train(
                        dataclasses.replace(
                            cfg.train,
                            algo=algo,
                            env=env,
                            seed=seed,
                            warm_start=warm_start,
                            run_dir=str(run_dir),
                            progress=False,
                        )
                    )
                    _collect(curves, finals, run_dir, final, algo, scale, seed)
                    bar.set_postfix(
                        last=f"{algo}@{scale:g}: {final['eval/consensus_accuracy']:.3f}"
                    )
                    bar.update()
    baseline_rows = _evaluate_baselines(cfg)
    write_csv(out_dir / "curves.csv", curves)
    write_csv(out_dir / "final.csv", finals + baseline_rows)
    summary = summarize(finals, baseline_rows)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    learning_plots.write_all(out_dir, curves, finals, baseline_rows)
    return summary


def _collect(
    curves: list,
    finals: list,
    run_dir: Path,
    final: dict[str, float],
    algo: str,
    scale: float,
    seed: int,
) -> None:
    tags = {"algo": algo, "reward_scale": scale, "seed": seed}
    curves.extend({**tags, **record} for record in read_metrics(run_dir / "metrics.jsonl"))
    finals.append({**tags, **final})


def _evaluate_baselines(cfg: CompareConfig) -> list[dict[str, Any]]:
    """Every baseline on the held-out episodes, once per seed (only ``random`` uses the seed)."""
    rows = []
    test_venv = vector_env_from(cfg.train.env, min(cfg.train.eval_problems, EVAL_BATCH), split="test")
    for seed in range(cfg.seeds):
        for name in cfg.baselines:
            policy = baselines.get(name, seed=seed) if name == "random" else baselines.get(name)
            metrics = held_out(policy, test_venv, cfg.train)
            rows.append({"algo": name, "reward_scale": "", "seed": seed, **metrics})
    return rows


def summarize(
    finals: list[dict[str, Any]],
    baseline_rows: list[dict[str, Any]],
    metric: str = "eval/consensus_accuracy",
) -> dict[str, Any]:
    """Mean and 95% CI of ``metric`` per (algorithm, reward scale) and per baseline, and the
    share of the gap between the best heuristic baseline and the oracle that each learner
    closes: (learner - best heuristic) / (oracle - best heuristic), ``None`` if the oracle
    is not above the best heuristic."""

    def grouped(rows: list[dict[str, Any]], key) -> dict[str, dict[str, float]]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(key(row), []).append(row)
        return {name: summarize_runs(members, [metric])[metric] for name, members in groups.items()}

    learners = grouped(finals, lambda row: f"{row['algo']}@{row['reward_scale']:g}")
    heuristics = grouped(baseline_rows, lambda row: row["algo"])
    summary: dict[str, Any] = {"metric": metric, "learners": learners, "baselines": heuristics}
    if "oracle" in heuristics and len(heuristics) > 1:
        best_name, best = max(
            ((k, v) for k, v in heuristics.items() if k != "oracle"), key=lambda kv: kv[1]["mean"]
        )
        gap = heuristics["oracle"]["mean"] - best["mean"]
        summary["best_heuristic"] = best_name
        summary["gap_closed"] = {
            name: (stat["mean"] - best["mean"]) / gap if gap > 0 else None
            for name, stat in learners.items()
        }
    return summary
