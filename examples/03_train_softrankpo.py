"""03: the MPDF recipe: SFT warm start on oracle actions, then SoftRankPO.

Stage 1 clones the privileged oracle (it reads correctness) into an observation-only
meta-policy; stage 2 improves it with SoftRankPO on group rollouts (G rollouts per
problem from the same start state), with a KL penalty to the SFT policy. Both are then
evaluated greedily on held-out problems next to three heuristic baselines. Run
``python examples/03_train_softrankpo.py --updates 2 --sft-updates 1`` for a quick check.
"""

from dataclasses import dataclass

import torch
import tyro

import deliberation_env as de
from algorithms import baselines
from algorithms.meta import SFT, SFTConfig, SoftRankPO, SoftRankPOConfig
from algorithms.meta.evaluate import evaluate


@dataclass
class Args:
    updates: int = 60
    """SoftRankPO updates (each plays groups_per_update x group_size episodes)."""
    sft_updates: int = 20
    """SFT updates (each plays episodes_per_update episodes)."""
    eval_problems: int = 200
    """Held-out problems to evaluate on."""
    seed: int = 0
    """Seed of both stages and of the evaluation."""


def main(args: Args) -> dict[str, float]:
    torch.set_num_threads(1)
    env_kwargs = {"task": "arithmetic", "team": "simulated", "n_agents": 3, "max_rounds": 3}

    sft_config = SFTConfig(episodes_per_update=128, seed=args.seed)
    sft = SFT(
        sft_config, de.vector_env(sft_config.num_envs, **env_kwargs), teacher=baselines.Oracle()
    )
    for _ in range(args.sft_updates):
        metrics = sft.train_step()
    print(
        f"SFT: {sft.episodes} episodes, "
        f"agreement with the oracle {metrics['losses/bc_agreement']:.3f}"
    )

    config = SoftRankPOConfig(groups_per_update=16, group_size=8, kl_coef=0.02, seed=args.seed)
    learner = SoftRankPO(
        config, de.vector_env(config.num_envs, **env_kwargs), warm_start=sft.network
    )
    for update in range(1, args.updates + 1):
        metrics = learner.train_step()
        if update % 10 == 0 or update == args.updates:
            print(
                f"update {update:3d}  team accuracy {metrics['rewards/team/mean']:.3f}  "
                f"persist {metrics['actions/persist_share']:.2f}  "
                f"KL to SFT {metrics['losses/kl']:.3f}"
            )

    test = de.vector_env(min(args.eval_problems, 200), split="test", **env_kwargs)
    heuristics = [baselines.Independent(), baselines.Debate(), baselines.ConfidenceThreshold()]
    policies = [*heuristics, sft.policy(), learner.policy()]
    accuracy = {}
    for policy in policies:
        result = evaluate(policy, test, range(args.eval_problems), seed=args.seed, progress=False)
        accuracy[policy.name] = result.consensus_accuracy[-1]
        print(f"{policy.name:>20}: held-out consensus accuracy {accuracy[policy.name]:.3f}")
    return accuracy


if __name__ == "__main__":
    main(tyro.cli(Args))
