"""Learning benchmarks of issue 4 on a simulated team where deliberation matters.

Results (see BENCHMARKS.md, section "Learning"):

1. Held-out accuracy of every learner and baseline, the oracle as the ceiling, and the
   share of the best-heuristic-to-oracle gap each learner closes (``scratch`` and ``recipe``).
2. Reward scale x0.1, x1, x10 for SoftRankPO, GRPO and MAGRPO (``scratch``).
3. The PERSIST share over training (``scratch`` and ``recipe``: ``action_shares.png``).
5. Wall time of one learner update over 4,096 transitions (``update-time``).

``scratch`` trains every policy-gradient learner from a fresh network (the optimizers alone);
``recipe`` is the MPDF recipe: SFT on oracle actions, then each learner with a KL to the SFT
policy. Usage::

    python benchmarks/learning.py --what update-time
    python benchmarks/learning.py --what scratch      # about 9 minutes on 2 shared CPU cores
    python benchmarks/learning.py --what recipe       # about 4 minutes
    python benchmarks/learning.py --what scratch --quick   # a smoke run in seconds
    python benchmarks/learning.py --what report       # the markdown tables of BENCHMARKS.md
    python benchmarks/learning.py --what scratch --algos magrpo --out-dir runs/benchmarks/learning-magrpo

Finished runs are reused and a killed comparison resumes where it stopped, so delete
``--out-dir`` (default ``runs/benchmarks/learning``) to measure changed code afresh. Every
benchmark writes its results to ``benchmarks/results/learning-<what>.json``; ``report``
only tabulates the comparisons' files.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import tyro
from results import write_results

from algorithms.core.compare import mean_and_interval
from algorithms.core.config import RunConfig
from algorithms.meta import PolicyGradientConfig, SoftRankPO, SoftRankPOConfig
from algorithms.meta.base import Rollout
from algorithms.meta.compare import CompareConfig, compare
from deliberation_env.meta.config import EnvConfig, SimulatedTeamConfig

DELIBERATION_MATTERS = SimulatedTeamConfig(
    skill=(0.65, 0.45, 0.3),  # unequal skills
    refine_gain=(0.6,),
    self_fix=(0.1,),
    corruption=(0.6,),  # refining a correct answer next to wrong peers is risky
    calibration=1.0,  # informative but imperfect confidence
    confidence_noise=1.0,
)
"""The benchmark team: no fixed protocol is best everywhere (debate helps wrong agents and
hurts right ones), and confidence is informative but noisy."""


@dataclass
class Args:
    what: Literal["scratch", "recipe", "update-time", "report"] = "update-time"
    """Which benchmark to run (see the module docstring)."""
    out_dir: str = "runs/benchmarks/learning"
    """Where the comparisons write their files."""
    seeds: int = 3
    """Seeds per learner and reward scale."""
    updates: int = 100
    """Policy-gradient updates per run (128 episodes each)."""
    quick: bool = False
    """A smoke run with a tiny budget (checks that the benchmark runs, measures nothing)."""
    algos: tuple[str, ...] = ()
    """Run only these learners (``magrpo``; ``sft`` is the recipe's warm start), with a new
    ``--out-dir``; results go to ``learning-<what>-<algos>.json``. ``()``: every learner."""


def batch_settings(kl_coef: float) -> dict[str, object]:
    """The same budget and regularization for every policy-gradient learner (the comparison's
    template; the SFT warm start plays the same 128 episodes per update)."""
    return {"groups_per_update": 16, "group_size": 8, "kl_coef": kl_coef}


def run_compare(args: Args) -> dict:
    """Results 1-3: the optimizers from scratch (three reward scales) or the SFT recipe (x1)."""
    recipe = args.what == "recipe"
    updates = 2 if args.quick else (60 if recipe else args.updates)
    learner = PolicyGradientConfig(
        env=EnvConfig(team="simulated", difficulty=3, simulated=DELIBERATION_MATTERS),
        run=RunConfig(
            updates=updates,
            eval_interval=max(1, updates // 10),
            eval_problems=20 if args.quick else 200,
            progress=False,
            resume=True,  # a re-run continues the runs in out_dir (refused if their settings differ)
        ),
        sft_updates=(1 if args.quick else 20) if recipe else 0,
        **batch_settings(kl_coef=0.02 if recipe else 0.05),
    )
    cfg = CompareConfig(
        algos=args.algos or (("sft", "softrankpo", "grpo", "magrpo") if recipe else ("softrankpo", "grpo", "magrpo")),
        seeds=1 if args.quick else args.seeds,
        reward_scales=(1.0,) if recipe or args.quick else (0.1, 1.0, 10.0),
        learner=learner,
        out_dir=str(Path(args.out_dir) / args.what),
    )
    start = time.perf_counter()
    summary = compare(cfg)
    summary["elapsed_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(summary, indent=2))
    with (Path(cfg.out_dir) / "compare.csv").open() as file:  # each run's held-out row: seeds, tokens, shares
        summary["runs"] = list(csv.DictReader(file))
    return summary


def update_time(transitions: int = 4096, repeats: int = 30) -> dict[str, float]:
    """Result 5: median wall time of one SoftRankPO update on ``transitions`` transitions.

    Times advantage forming and ``optimize`` (forward, exact KL to the reference, clipped
    loss, backward, Adam) on a synthetic batch with the env's observation shapes, for one
    gradient step over the whole batch and for the default schedule (4 epochs x 4
    minibatches), on one thread as the harness runs it.
    """
    import deliberation_env as de

    torch.set_num_threads(1)
    venv = de.vector_env(128, team="simulated")
    generator = torch.Generator().manual_seed(0)
    rollout = Rollout(
        self_features=torch.rand(transitions, len(de.SELF_FEATURES), generator=generator),
        peer_features=torch.rand(transitions, 2, len(de.PEER_FEATURES), generator=generator),
        actions=torch.randint(0, 3, (transitions,), generator=generator),
        logp=torch.full((transitions,), -np.log(3.0)),
        env_index=torch.randint(0, 128, (transitions,), generator=generator),
        agent_index=torch.randint(0, 3, (transitions,), generator=generator),
        returns=torch.randn(16, 8, 3, generator=generator),
        team_rewards=torch.zeros(16, 8),
        metrics={},
    )
    results = {
        "transitions": transitions,
        "machine": f"{platform.machine()}, torch {torch.__version__}",
    }
    for epochs, minibatches in ((1, 1), (4, 4)):
        config = SoftRankPOConfig(
            groups_per_update=16, group_size=8, update_epochs=epochs, num_minibatches=minibatches
        )
        learner = SoftRankPO(config, venv)
        times = []
        for _ in range(repeats):
            begin = time.perf_counter()
            advantages = learner.compute_advantages(learner.returns(rollout))
            per_env = advantages.reshape(venv.num_envs, 3)
            learner.optimize(rollout, per_env[rollout.env_index, rollout.agent_index])
            times.append(time.perf_counter() - begin)
        results[f"ms_{epochs}x{minibatches}"] = round(1000 * float(np.median(times)), 1)
    print(json.dumps(results, indent=2))
    return results


PERSIST_COLUMNS = (
    ("sampled in training", "actions/persist_share"),
    ("greedy on held-out problems", "eval/persist_share"),
)


def persist_trend(rows: list[dict[str, str]], algo: str, column: str) -> str:
    """``first -> peak -> last`` of ``column``'s mean over seeds, for one algorithm."""
    by_step: dict[int, list[float]] = {}
    for row in rows:
        if row["algo"] == algo and row.get(column):
            by_step.setdefault(int(row["step"]), []).append(float(row[column]))
    if not by_step:
        return "n/a"
    means = [np.mean(by_step[step]) for step in sorted(by_step)]
    return f"{means[0]:.0%} -> {max(means):.0%} -> {means[-1]:.0%}"


def report(out_dir: Path) -> str:
    """Markdown tables of results 1-3 from the comparisons' ``compare.json`` and ``curves.csv``."""
    lines = []
    for what in ("scratch", "recipe"):
        path = out_dir / what / "compare.json"
        if not path.is_file():
            continue
        summary = json.loads(path.read_text())["summary"]
        gap = summary.get("gap_closed", {})
        lines += [
            f"**{what}** (held-out consensus accuracy, mean +- 95% CI over seeds)",
            "",
            "| policy | reward scale | accuracy | gap closed |",
            "|---|---|---|---|",
        ]
        for name, stat in summary["learners"].items():
            algo, scale = name.split("@")
            closed = "n/a" if gap.get(name) is None else f"{gap[name]:.0%}"
            lines.append(
                f"| {algo} | x{scale} | {mean_and_interval(stat)} | {closed} |"
            )
        for name, stat in summary["baselines"].items():
            lines.append(f"| {name} (baseline) | - | {mean_and_interval(stat)} | |")
        with (out_dir / what / "curves.csv").open() as file:
            rows = [r for r in csv.DictReader(file) if r["reward_scale"] == "1.0"]
        lines += ["", "PERSIST share at x1 (mean over seeds), first -> peak -> last:", ""]
        for algo in dict.fromkeys(r["algo"] for r in rows):
            parts = [
                f"{label} {persist_trend(rows, algo, column)}" for label, column in PERSIST_COLUMNS
            ]
            lines.append(f"- {algo}: " + "; ".join(parts))
        lines.append("")
    text = "\n".join(lines)
    print(text)
    return text


def main(args: Args) -> None:
    if args.what == "report":
        report(Path(args.out_dir))
        return
    results = update_time(repeats=3 if args.quick else 30) if args.what == "update-time" else run_compare(args)
    name = "-".join(("learning", args.what, *(["+".join(args.algos)] if args.algos else [])))
    write_results(name, {"args": dataclasses.asdict(args), **results})


if __name__ == "__main__":
    main(tyro.cli(Args))
