"""04: compare SoftRankPO, GRPO and MAGRPO on the same env, problems and budget.

``algorithms.meta.compare.compare`` trains every algorithm for every seed and reward scale
from the same SFT warm start, evaluates them and the baselines on the same held-out
problems, and writes CSV/JSON and plots (learning curves with 95% bands, final accuracy
with CIs, action shares, the reward-scale ablation) to ``--out-dir``. The same runs are
``deliberate compare meta`` on the command line. Run
``python examples/04_compare_optimizers.py --updates 2 --seeds 1`` for a quick check.

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon):
``--seeds 1 --reward-scales 1`` (three learners of 40 updates) took about 51 s; the
defaults train nine times as many learner runs (3 seeds x 3 scales), well over 3 minutes
(not timed); the tests' settings (``--updates 1 --sft-updates 1 --seeds 1 --reward-scales
1``) take about 8 s.
"""

from dataclasses import dataclass

import tyro

from algorithms.core.config import RunConfig
from algorithms.core.run_dirs import new_run_dir
from algorithms.meta import PolicyGradientConfig
from algorithms.meta.compare import CompareConfig, compare


@dataclass
class Args:
    updates: int = 40
    """Updates per learner (each plays groups_per_update x group_size episodes)."""
    sft_updates: int = 10
    """SFT warm-start updates, shared by all learners of a seed."""
    seeds: int = 3
    """Seeds per learner."""
    reward_scales: tuple[float, ...] = (0.1, 1.0, 10.0)
    """Reward scales of the ablation."""
    out_dir: str = ""
    """Where the comparison's files go; ``""``: a new folder, ``runs/compare/meta-<algos>-<time>``
    (a folder that holds a comparison is refused: every comparison gets its own)."""


def mean_and_interval(stat: dict) -> str:
    """``mean ± half-width (n=...)``; one value has no interval, and says so."""
    if stat["n"] < 2:
        return f"{stat['mean']:.3f} (n=1, no interval)"
    return f"{stat['mean']:.3f} ± {stat['ci95']:.3f} (n={stat['n']})"


def main(args: Args) -> dict:
    algos = ("softrankpo", "grpo", "magrpo")
    out_dir = args.out_dir or str(new_run_dir("compare", "meta", "+".join(algos)))
    # The template every learner shares: the same budget (and the warm start's batch) for each.
    template = PolicyGradientConfig(
        run=RunConfig(
            updates=args.updates,
            eval_interval=max(1, args.updates // 5),
            eval_problems=200,
            progress=True,  # a bar over the comparison's runs, on stderr
        ),
        sft_updates=args.sft_updates,
        groups_per_update=16,
        group_size=8,
    )
    summary = compare(
        CompareConfig(
            learner=template,
            algos=algos,
            seeds=args.seeds,
            reward_scales=args.reward_scales,
            out_dir=out_dir,
        )
    )
    print(f"held-out {summary['metric']} (mean ± 95% CI over seeds):")
    for name, stat in {**summary["learners"], **summary["baselines"]}.items():
        print(f"  {name:>22}: {mean_and_interval(stat)}")
    for name, share in summary.get("gap_closed", {}).items():
        closed = "n/a" if share is None else f"{share:+.0%}"
        print(f"  {name:>22} closes {closed} of the {summary['best_heuristic']}-to-oracle gap")
    print(f"files in {out_dir}")
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))
