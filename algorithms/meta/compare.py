"""Optimizer comparisons of the meta family: same env, same problems, same budget
(``deliberate compare meta``).

``compare(CompareConfig(...), learners=None)`` runs ``train`` for every algorithm x seed x
reward scale with the same env, problems, warm start and budget (the shared loop of both
families, :func:`~algorithms.core.compare.run_grid`, seed by seed after each seed's SFT warm
start), evaluates the baselines of :mod:`algorithms.meta.baselines` on the same held-out
problems, and writes to ``out_dir`` the files of every comparison
(:mod:`algorithms.core.compare`: ``compare.csv`` with the final held-out metrics per run,
then per baseline; ``curves.csv``; ``compare.json`` whose ``summary`` holds the mean and 95%
CI over seeds per ``algo@reward scale`` and baseline and the share of the
best-heuristic-to-oracle gap each learner closes; ``learning_curves.png``: held-out
consensus accuracy vs training episodes; ``final_accuracy.png``) and two more figures:
``action_shares.png`` (PERSIST / REFINE / CONCEDE shares over training) and
``reward_scale.png`` (final accuracy vs reward scale, the ablation).

A learner of one's own (``learners={"mine": Mine}``, or an import path in ``algos``) is
built as the shipped ones are, ``Mine(config, venv, warm_start=network)``: ``config`` is
the run's :class:`~algorithms.meta.config.GRPOConfig` (the template's shared settings
with the run's seed, :meth:`~algorithms.meta.config.CompareConfig.run_config`; the learner's
``config_class`` where that derives from a shipped learner's config), ``venv`` a ``de.vector_env`` of ``config.num_envs`` envs (the budget every learner
gets), ``warm_start`` the seed's SFT network or None. Besides what the run loop drives,
it has ``policy()``: the greedy :class:`~algorithms.meta.policy.Policy` (``name``,
``act(obs, infos)``) that :func:`~algorithms.meta.evaluate.evaluate` plays
(``examples/05_custom_learner.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from tqdm.auto import tqdm

from algorithms.core.checkpoints import CHECKPOINT
from algorithms.core.compare import (
    LearnerFactory,
    check_own_settings,
    check_per_run_settings,
    check_takes_config,
    difference_lines,
    learner_label,
    mean_and_interval,
    refused_for,
    run_grid,
    settings_taken,
    summarize_runs,
    user_learners,
    write_results,
)
from algorithms.core.config import run_settings
from algorithms.core.metrics import read_metrics
from algorithms.core.run_dirs import (
    check_resumed_runs,
    holds_run,
    new_run_dir,
    open_run_dir,
    removed_if_nothing_ran,
)
from algorithms.meta import baselines, plots
from algorithms.meta.config import (
    ALGOS,
    POLICY_GRADIENT_CONFIGS,
    CompareConfig,
    PolicyGradientConfig,
    with_held_out_problems,
    with_task_defaults,
)
from algorithms.meta.train import held_out, held_out_problems, train


def compare(cfg: CompareConfig, learners: Mapping[str, LearnerFactory] | None = None) -> dict[str, Any]:
    """Run the comparison, write its files (see the module docstring) and return the summary.

    Args:
        cfg: The comparison.
        learners: Learners of one's own by name, each named in ``cfg.algos`` too.

    Raises:
        ValueError: Before anything is written, on a name of ``cfg.algos`` that is no
            learner, or an ``out_dir`` that holds a comparison (without ``--resume``).
    """
    check_per_run_settings(cfg.learner, PolicyGradientConfig(), ("seed", "env.reward_scale", "run.resume_from"))  # a run_dir is replaced
    own = user_learners(cfg.algos, ALGOS, learners, "meta")
    taken = settings_taken(cfg.algos, own, POLICY_GRADIENT_CONFIGS, PolicyGradientConfig)
    check_own_settings(cfg, cfg.algos, tuple(POLICY_GRADIENT_CONFIGS), ALGOS, taken)
    cfg = dataclasses.replace(cfg, learner=with_held_out_problems(with_task_defaults(cfg.learner)))
    names = [learner_label(algo) for algo in cfg.algos]
    if not cfg.out_dir:
        cfg = dataclasses.replace(cfg, out_dir=str(new_run_dir("compare", "meta", "+".join(names))))
    resume = cfg.learner.run.resume
    if resume:  # before its config is rewritten: no run may end before where it is (the warm starts run their own)
        check_resumed_runs(cfg.out_dir, cfg.learner.run.updates, passed_over=("sft",))
    trained = [name for name in names if name != "sft"]
    for algo in cfg.algos:  # a setting a learner refuses: before the first run, not after
        if algo != "sft":
            factory = own.get(learner_label(algo))
            with refused_for(algo):
                check_takes_config(algo, factory, type(cfg.run_config(algo, 0, Path(cfg.out_dir), cfg.reward_scales[0], factory)))
    runs = cfg.seeds * (len(cfg.reward_scales) * len(trained) + bool(cfg.learner.sft_updates))
    with (
        removed_if_nothing_ran(cfg.out_dir),
        tqdm(total=runs, desc="compare", unit="run", disable=not cfg.learner.run.progress) as bar,
    ):
        out_dir = open_run_dir(
            cfg.out_dir, dataclasses.asdict(cfg), resume, ("out_dir", *run_settings("learner.run.")), flag="--out-dir"
        )
        grid = Grid(cfg, out_dir, bar, own)
        grid_runs = [(scale, name) for scale in cfg.reward_scales for name in trained]
        run_grid(grid.train_learner, grid_runs, cfg.seeds, setup_seed=grid.warm_start_seed)
    baseline_rows = _evaluate_baselines(cfg)
    summary = summarize_comparison(grid.finals, baseline_rows)
    record = {"config": dataclasses.asdict(cfg), "env": "deliberation-v1", "summary": summary}
    write_results(out_dir, record, grid.finals + baseline_rows, grid.curves)
    plots.write_comparison(out_dir, grid.curves, grid.finals, baseline_rows)
    return summary


def compare_table(summary: dict[str, Any], cfg: CompareConfig) -> Table:
    """Held-out consensus accuracy per learner (at each reward scale) and per baseline:
    mean +- 95% CI over seeds (:func:`~algorithms.core.compare.mean_and_interval`), and the
    share of the best-heuristic-to-oracle gap closed; under it, whether the seeds show each
    pair of learners' difference (:func:`~algorithms.core.compare.difference_lines`)."""
    table = Table(title=f"held-out {summary['metric']}, {cfg.seeds} seed(s), {cfg.learner.run.eval_problems} test problems")
    for column in ("policy", "mean +- 95% CI", "seeds", "gap closed"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    gap = summary.get("gap_closed", {})
    for name, stat in {**summary["learners"], **summary["baselines"]}.items():
        closed = gap.get(name)
        table.add_row(name, mean_and_interval(stat), str(stat["n"]), "" if closed is None else f"{closed:+.0%}")
    table.caption = "\n".join([
        "learners as algo@reward scale; gap closed: (learner - best heuristic) / (oracle - best heuristic)"
        + (f", best heuristic {summary['best_heuristic']}" if "best_heuristic" in summary else ""),
        *difference_lines(summary["learners"], summary["metric"]),
    ])
    return table


@dataclass
class Grid:
    """The comparison's runs as :func:`~algorithms.core.compare.run_grid` calls them, seed by
    seed: the seed's warm start, then every (reward scale, learner) from it.

    Attributes:
        cfg: The comparison.
        out_dir: Its folder: ``sft/seed<k>`` and ``scale<s>/<algo>/seed<k>`` hold the runs.
        bar: The progress bar over the runs.
        own: The learners of one's own by name (:func:`~algorithms.core.compare.user_learners`).
        curves: Every run's metrics records, tagged with ``algo``, ``reward_scale`` and ``seed``.
        finals: Every run's final metrics, tagged alike.
        warm_start: The checkpoint the current seed's learners start from ("" for none).
    """

    cfg: CompareConfig
    out_dir: Path
    bar: Any
    own: dict[str, LearnerFactory]
    curves: list[dict[str, Any]] = field(default_factory=list)
    finals: list[dict[str, Any]] = field(default_factory=list)
    warm_start: str = ""

    def warm_start_seed(self, seed: int) -> None:
        """The seed's warm start: the configured one, else (with ``sft_updates``) an SFT run,
        recorded at every reward scale when ``sft`` is compared (it is the same at each)."""
        template = self.cfg.learner
        self.warm_start = template.warm_start
        if not template.sft_updates or self.warm_start:
            return
        run_dir = self.out_dir / "sft" / f"seed{seed}"
        final = train(self.config("sft", seed, run_dir, template.env.reward_scale)).after
        self.warm_start = str(run_dir / CHECKPOINT)
        if "sft" in self.cfg.algos:
            for scale in self.cfg.reward_scales:
                self.record(run_dir, final, "sft", scale, seed)
        self.bar.update()

    def train_learner(self, scaled: tuple[float, str], seed: int) -> dict[str, float]:
        """Train one learner at one reward scale and seed from the seed's warm start; its
        final metrics."""
        scale, algo = scaled
        run_dir = self.out_dir / f"scale{scale:g}" / algo / f"seed{seed}"
        config = dataclasses.replace(self.config(algo, seed, run_dir, scale), warm_start=self.warm_start, sft_updates=0)
        final = train(config, self.own.get(algo)).after
        self.record(run_dir, final, algo, scale, seed)
        self.bar.set_postfix(last=f"{algo}@{scale:g}: {final['eval/consensus_accuracy']:.3f}")
        self.bar.update()
        return final

    def config(self, algo: str, seed: int, run_dir: Path, scale: float) -> Any:
        """The config of one run (:meth:`~algorithms.meta.config.CompareConfig.run_config`),
        resumed when the comparison is and the run has started."""
        config = self.cfg.run_config(algo, seed, run_dir, scale, self.own.get(algo))
        resume = config.run.resume and holds_run(run_dir)
        return dataclasses.replace(config, run=dataclasses.replace(config.run, resume=resume))

    def record(self, run_dir: Path, final: dict[str, float], algo: str, scale: float, seed: int) -> None:
        """Add a finished run's metrics records and final metrics to :attr:`curves` and :attr:`finals`."""
        tags = {"algo": algo, "reward_scale": scale, "seed": seed}
        self.curves.extend({**tags, **record} for record in read_metrics(run_dir / "metrics.jsonl"))
        self.finals.append({**tags, **final})


def _evaluate_baselines(cfg: CompareConfig) -> list[dict[str, Any]]:
    """Every baseline on the held-out episodes, once per seed (only ``random`` uses the seed)."""
    rows = []
    template = cfg.learner
    test_venv, _ = held_out_problems(template, template.run.eval_problems)
    for seed in range(cfg.seeds):
        for name in cfg.baselines:
            policy = baselines.get(name, seed=seed) if name == "random" else baselines.get(name)
            metrics = held_out(policy, test_venv, template)
            rows.append({"algo": name, "reward_scale": "", "seed": seed, **metrics})
    return rows


def summarize_comparison(
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
