"""02: compare the heuristic baselines (and the privileged oracle) on held-out problems.

Uses the batched vector env and the evaluation helper every learner uses, so the numbers
are comparable with ``deliberate compare``.

    python examples/02_baselines.py [--team simulated] [--n-problems 200]

Runtime: about 5 s on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel
Xeon).
"""

from __future__ import annotations

from dataclasses import dataclass

import tyro

import deliberation_env as de
from algorithms import baselines
from algorithms.commands.common import console
from algorithms.commands.run import results_table
from algorithms.meta.evaluate import evaluate_rounds


@dataclass
class Args:
    team: str = "simulated"
    """Team preset: ``simulated`` or ``smollm2``."""
    n_problems: int = 200
    """Held-out (test split) problems."""
    max_rounds: int = 3
    """Rounds per episode."""
    num_envs: int = 64
    """Episodes stepped together."""


def main(args: Args) -> None:
    venv = de.vector_env(args.num_envs, task="arithmetic", team=args.team, max_rounds=args.max_rounds, split="test")
    results = [
        evaluate_rounds(baselines.get(name), venv, range(min(args.n_problems, len(venv.problems))))  # progress on stderr
        for name in baselines.BASELINES
    ]
    console.print(results_table(results, f"baselines, team {args.team}"))
    best = max((r for r in results if r.policy != "oracle"), key=lambda r: r.consensus_accuracy[-1])
    print(f"best heuristic: {best.policy} ({best.consensus_accuracy[-1]:.3f} consensus accuracy)")


if __name__ == "__main__":
    main(tyro.cli(Args))
