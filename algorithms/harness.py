"""Training runs and optimizer comparisons: same env, same problems, same budget.

``train(TrainConfig(...))`` trains one learner (optionally after an SFT warm start),
evaluates it greedily on held-out problems every ``eval_every`` updates, logs JSONL
metrics (:mod:`algorithms.metrics`) and checkpoints, and resumes from its run directory.

``compare(CompareConfig(...))`` runs ``train`` for every algorithm x seed x reward scale
with the same env, problems, warm start and budget, evaluates the baselines of
:mod:`algorithms.baselines` on the same held-out problems, and writes to ``out_dir``:

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

import csv
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from scipy import stats
from tqdm.auto import tqdm

from algorithms import baselines, learning_plots
from algorithms.evaluate import evaluate
from algorithms.learners import (
    LEARNERS,
    SFT,
    GRPOConfig,
    Learner,
    MAGRPOConfig,
    SFTConfig,
    SoftRankPOConfig,
)
from algorithms.metrics import MetricLogger, read_metrics
from algorithms.network import MetaPolicyNetwork
from algorithms.policy import Policy
from deliberation_env.config import EnvConfig, SimulatedTeamConfig

__all__ = [
    "CompareConfig",
    "EnvConfig",
    "SimulatedTeamConfig",
    "TrainConfig",
    "compare",
    "load_network",
    "mean_ci",
    "summarize",
    "train",
]

Algo = Literal["softrankpo", "grpo", "magrpo", "sft"]
EVAL_BATCH = 256
"""Most test envs stepped together during an evaluation."""


def default_env() -> EnvConfig:
    """The env of the learning benchmarks: the simulated team on arithmetic at difficulty 3."""
    return EnvConfig(team="simulated", difficulty=3)


@dataclass
class TrainConfig:
    """One training run (``deliberate train``)."""

    algo: Algo = "softrankpo"
    """Learner to train."""
    env: EnvConfig = field(default_factory=default_env)
    """The training env (:class:`deliberation_env.config.EnvConfig`, any task and team);
    evaluation uses the same env on the test split."""
    updates: int = 100
    """Updates of ``algo``; each plays ``num_envs`` training episodes."""
    sft_updates: int = 20
    """SFT warm-start updates before a policy-gradient learner (its initial policy and KL
    reference); 0 starts from a fresh network. Ignored for ``algo=sft`` or with ``warm_start``."""
    warm_start: str = ""
    """Path of an SFT checkpoint to start from instead of training one."""
    eval_every: int = 10
    """Evaluate on held-out problems every this many updates, and at the end."""
    eval_problems: int = 200
    """Held-out (test split) problems per evaluation: the first ``eval_problems``."""
    eval_seed: int = 0
    """Seed of the held-out episodes; keep it fixed across runs so that every run and
    baseline is evaluated on identical episodes (common random numbers)."""
    seed: int = 0
    """Seed of the run's training; overrides the learner configs' ``seed``."""
    problem_pool: int = 0
    """Train on the first this many training problems only (0: all); overrides the learner
    configs' ``problem_pool``."""
    seed_pool: int = 0
    """Episode seeds from ``{0, ..., seed_pool - 1}`` (0: fresh ones), so that an LLM team's
    rollouts repeat and the response cache serves them; overrides the learner configs'."""
    run_dir: str = "runs/train"
    """Directory for metrics.jsonl, checkpoints and summary.json."""
    resume: bool = True
    """Continue from ``run_dir``'s checkpoints if there are any."""
    tensorboard: bool = False
    """Also log to TensorBoard (needs the ``tensorboard`` extra)."""
    progress: bool = True
    """Show a progress bar."""
    softrankpo: SoftRankPOConfig = field(default_factory=SoftRankPOConfig)
    """SoftRankPO settings (used when ``algo == "softrankpo"``)."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO settings."""
    magrpo: MAGRPOConfig = field(default_factory=MAGRPOConfig)
    """MAGRPO settings."""
    sft: SFTConfig = field(default_factory=SFTConfig)
    """SFT settings (the warm start, or ``algo == "sft"``)."""

    def __post_init__(self) -> None:
        if self.algo not in LEARNERS:
            raise ValueError(f"algo must be one of {sorted(LEARNERS)}, got {self.algo!r}")
        for name in ("updates", "eval_every", "eval_problems"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.sft_updates < 0:
            raise ValueError(f"sft_updates must be >= 0 (0: no warm start), got {self.sft_updates}")
        if self.warm_start and not Path(self.warm_start).is_file():
            raise ValueError(
                f"warm_start {self.warm_start!r} is not a file: give an SFT checkpoint "
                "(e.g. <run_dir>/sft/checkpoint.pt) or leave it empty"
            )

    def learner_config(self, algo: str) -> Any:
        """The config of ``algo`` with the run's seed and pools."""
        return dataclasses.replace(
            getattr(self, algo),
            seed=self.seed,
            problem_pool=self.problem_pool,
            seed_pool=self.seed_pool,
        )


def held_out(policy: Policy, venv: Any, cfg: TrainConfig) -> dict[str, float]:
    """Greedy held-out metrics (``eval/...``) of ``policy`` on the run's fixed test problems.

    Args:
        policy: The policy to evaluate.
        venv: A test-split vector env (``cfg.env.make(n, split="test")``).
        cfg: The run's config (how many problems, which episode seed).
    """
    result = evaluate(policy, venv, range(cfg.eval_problems), seed=cfg.eval_seed, progress=False)
    return {
        "eval/accuracy": result.accuracy[-1],
        "eval/consensus_accuracy": result.consensus_accuracy[-1],
        "eval/tokens": result.tokens_per_problem,
        **{f"eval/{action}_share": share for action, share in result.action_shares.items()},
    }


def _run_learner(
    learner: Learner, cfg: TrainConfig, updates: int, run_dir: Path, label: str
) -> dict[str, float]:
    """Train ``learner`` up to ``updates`` updates in ``run_dir`` (resuming), evaluating."""
    checkpoint = run_dir / "checkpoint.pt"
    if cfg.resume and checkpoint.is_file():
        learner.load(checkpoint)
    test_venv = cfg.env.make(min(cfg.eval_problems, EVAL_BATCH), split="test")
    logger = MetricLogger(run_dir, tensorboard=cfg.tensorboard)
    if learner.update == 0:  # the curve starts at the initial (e.g. warm-started) policy
        logger.log(0, 0, held_out(learner.policy(), test_venv, cfg))
    final: dict[str, float] = {}
    with tqdm(
        total=updates, initial=learner.update, desc=label, disable=not cfg.progress, leave=False
    ) as bar:
        while learner.update < updates:
            metrics = learner.train_step()
            if learner.update % cfg.eval_every == 0 or learner.update == updates:
                metrics.update(held_out(learner.policy(), test_venv, cfg))
                final = {k: v for k, v in metrics.items() if k.startswith("eval/")}
            # Checkpoint every update: a resumed run repeats no update and no log line.
            learner.save(checkpoint)
            logger.log(learner.update, learner.episodes, metrics)
            bar.set_postfix(acc=f"{metrics.get('rewards/team/mean', float('nan')):.3f}")
            bar.update()
    logger.close()
    if not final:  # a finished run resumed: its last evaluation is in the log
        final = {
            k: v
            for k, v in read_metrics(run_dir / "metrics.jsonl")[-1].items()
            if k.startswith("eval/")
        }
    return final


def train(cfg: TrainConfig) -> dict[str, float]:
    """Train ``cfg.algo`` (after an SFT warm start if configured); return its final held-out
    metrics.

    Writes ``metrics.jsonl``, ``checkpoint.pt``, ``config.json`` and ``summary.json`` in
    ``cfg.run_dir`` (the warm start in ``run_dir/sft``); re-running with ``resume``
    continues from the checkpoints.
    """
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    torch.set_num_threads(1)  # tiny networks: threads cost more than they give
    teacher = baselines.Oracle()
    if cfg.algo == "sft":
        config = cfg.learner_config("sft")
        learner: Learner = SFT(config, cfg.env.make(config.num_envs), teacher)
        final = _run_learner(learner, cfg, cfg.updates, run_dir, f"sft seed {cfg.seed}")
    else:
        warm = None
        if cfg.warm_start:
            warm = load_network(cfg.warm_start, cfg.env)
        elif cfg.sft_updates:
            sft_config = cfg.learner_config("sft")
            sft = SFT(sft_config, cfg.env.make(sft_config.num_envs), teacher)
            _run_learner(
                sft,
                dataclasses.replace(cfg, eval_every=cfg.sft_updates),
                cfg.sft_updates,
                run_dir / "sft",
                f"sft seed {cfg.seed}",
            )
            warm = sft.network
        config = cfg.learner_config(cfg.algo)
        learner = LEARNERS[cfg.algo](config, cfg.env.make(config.num_envs), warm_start=warm)
        final = _run_learner(learner, cfg, cfg.updates, run_dir, f"{cfg.algo} seed {cfg.seed}")
    (run_dir / "summary.json").write_text(json.dumps(final, indent=2))
    return final


def load_network(path: str | Path, env: EnvConfig) -> MetaPolicyNetwork:
    """The network of a learner checkpoint (any algorithm), for warm starts and evaluation."""
    state = torch.load(path, weights_only=False)
    config = state["config"]
    space = env.make(1).observation_space("agent_0")
    network = MetaPolicyNetwork(
        space["self"].shape[-1],
        space["peers"].shape[-1],
        config["hidden_size"],
        config["num_heads"],
    )
    network.load_state_dict(state["network"])
    return network


@dataclass
class CompareConfig:
    """An optimizer comparison (``deliberate compare``): every algorithm x seed x reward scale."""

    algos: tuple[Algo, ...] = ("softrankpo", "grpo", "magrpo")
    """Learners to compare; ``sft`` adds the warm start itself as a row."""
    seeds: int = 3
    """Seeds per (algorithm, reward scale): seeds 0 .. seeds-1."""
    reward_scales: tuple[float, ...] = (1.0,)
    """Reward scales to run every learner under (the ablation); baselines do not depend on it."""
    baselines: tuple[str, ...] = (
        "independent",
        "debate",
        "minority-concedes",
        "confidence-threshold",
        "random",
        "oracle",
    )
    """Baselines (:mod:`algorithms.baselines`) evaluated on the same held-out problems and seeds."""
    train: TrainConfig = field(default_factory=lambda: TrainConfig(progress=False))
    """Template of every run: env, budget (``updates``, batch sizes), warm start, evaluation
    (its ``algo``, ``seed``, ``run_dir`` and ``env.reward_scale`` are set per run)."""
    out_dir: str = "runs/compare"
    """Directory for every run's files and the comparison's CSV, JSON and plots."""
    progress: bool = True
    """Show a progress bar over the runs."""

    def __post_init__(self) -> None:
        unknown = [a for a in self.algos if a not in LEARNERS]
        if unknown or not self.algos:
            raise ValueError(
                f"algos must be a non-empty subset of {sorted(LEARNERS)}, got {self.algos}"
            )
        unknown = [b for b in self.baselines if b not in baselines.BASELINES]
        if unknown:
            raise ValueError(f"unknown baselines {unknown}; known: {sorted(baselines.BASELINES)}")
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if not self.reward_scales or min(self.reward_scales) <= 0:
            raise ValueError(f"reward_scales must be positive numbers, got {self.reward_scales}")
        sizes = {a: getattr(self.train, a).num_envs for a in self.algos if a != "sft"}
        if len(set(sizes.values())) > 1:
            raise ValueError(
                f"every learner must get the same budget, but episodes per update differ: {sizes}; "
                "set the same groups_per_update and group_size for each algorithm"
            )
        if "sft" in self.algos and not self.train.sft_updates:
            raise ValueError("algos includes 'sft' but train.sft_updates is 0: give it SFT updates")


def compare(cfg: CompareConfig) -> dict[str, Any]:
    """Run the comparison, write its files (see the module docstring) and return the summary."""
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
    learners = [a for a in cfg.algos if a != "sft"]
    runs = cfg.seeds * (len(cfg.reward_scales) * len(learners) + bool(cfg.train.sft_updates))
    curves: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    with tqdm(total=runs, desc="compare", unit="run", disable=not cfg.progress) as bar:
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
                    )
                )
                warm_start = str(run_dir / "checkpoint.pt")
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
                        )
                    )
                    _collect(curves, finals, run_dir, final, algo, scale, seed)
                    bar.set_postfix(
                        last=f"{algo}@{scale:g}: {final['eval/consensus_accuracy']:.3f}"
                    )
                    bar.update()
    baseline_rows = _evaluate_baselines(cfg)
    _write_csv(out_dir / "curves.csv", curves)
    _write_csv(out_dir / "final.csv", finals + baseline_rows)
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
    test_venv = cfg.train.env.make(min(cfg.train.eval_problems, EVAL_BATCH), split="test")
    for seed in range(cfg.seeds):
        for name in cfg.baselines:
            policy = baselines.get(name, seed=seed) if name == "random" else baselines.get(name)
            metrics = held_out(policy, test_venv, cfg.train)
            rows.append({"algo": name, "reward_scale": "", "seed": seed, **metrics})
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def mean_ci(values: list[float]) -> dict[str, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (0 for one value)."""
    values_array = np.asarray(values, dtype=float)
    n = len(values_array)
    half = 0.0
    if n > 1:
        half = float(stats.t.ppf(0.975, n - 1) * values_array.std(ddof=1) / np.sqrt(n))
    return {"mean": float(values_array.mean()), "ci95": half, "n": n}


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
        groups: dict[str, list[float]] = {}
        for row in rows:
            groups.setdefault(key(row), []).append(row[metric])
        return {name: mean_ci(values) for name, values in groups.items()}

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
