"""10: RLlib PPO on the env (new API stack), one policy shared by every agent.

RLlib takes a PettingZoo parallel env through its own ``ParallelPettingZooEnv`` wrapper:
no connector and no wrapper of ours. The env needs one documented option for that,
``observation="flat"``: RLlib has no default encoder for the Dict observation (its
``peers`` part is 2-D), and the flat Box holds the same features (``de.spaces.flat_features``).

All agents map to the policy ``shared`` (parameter sharing). After training, the
policy's RLModule acts greedily on held-out problems through the package's own
evaluation (:func:`algorithms.meta.evaluate.evaluate`). Needs the ``integrations`` extra.

    python examples/10_rllib.py [--iterations 20] [--batch-size 1024]

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): the
defaults ran over 10 minutes (11 of 20 iterations done when stopped, one line each); the
tests' settings (``--iterations 2 --eval-problems 8 --batch-size 64``) take about 41 s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import ray
import torch
import tyro
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module import RLModule
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

import deliberation_env as de
from algorithms.meta.evaluate import evaluate


@dataclass
class Args:
    iterations: int = 20
    """PPO iterations (collect a batch, then train on it)."""
    batch_size: int = 1024
    """Env steps (rounds of the whole team) collected per iteration."""
    eval_problems: int = 200
    """Held-out problems to evaluate on."""
    seed: int = 0
    """Seed of PPO and of the evaluation."""


ENV_KWARGS = {"task": "arithmetic", "team": "simulated", "n_agents": 3, "max_rounds": 3, "observation": "flat"}


class RLlibPolicy:
    """An RLlib RLModule as a package :class:`~algorithms.meta.policy.Policy`: the argmax of its logits."""

    name = "ppo (rllib)"

    def __init__(self, module: RLModule):
        self.module = module

    def act(self, obs, infos):
        actions = {}
        for agent, features in obs.items():
            with torch.no_grad():
                out = self.module.forward_inference({Columns.OBS: torch.as_tensor(features)})
            actions[agent] = out[Columns.ACTION_DIST_INPUTS].argmax(-1).numpy()
        return actions


def ppo_config(args: Args) -> PPOConfig:
    """PPO with one shared policy, sampling in the driver process."""
    return (
        PPOConfig()
        .environment("deliberation", env_config=ENV_KWARGS)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "shared")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=args.batch_size, minibatch_size=min(args.batch_size, 256), num_epochs=4)
        .debugging(seed=args.seed)
    )


def held_out_accuracy(module: RLModule, args: Args) -> float:
    """Share of held-out problems whose final consensus is correct, greedy actions."""
    venv = de.vector_env(min(args.eval_problems, 256), split="test", **ENV_KWARGS)
    return evaluate(RLlibPolicy(module), venv, range(args.eval_problems), args.seed, progress=False).accuracy


def main(args: Args) -> float:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    register_env("deliberation", lambda config: ParallelPettingZooEnv(de.parallel_env(**config)))
    algo = ppo_config(args).build_algo()
    try:
        untrained = held_out_accuracy(algo.get_module("shared"), args)
        for iteration in range(args.iterations):
            result = algo.train()
            runners = result["env_runners"]
            print(f"iteration {iteration + 1}: {int(runners['num_env_steps_sampled_lifetime'])} env steps, "
                  f"mean episode return (all agents) {runners.get('episode_return_mean', np.nan):+.3f}")
        accuracy = held_out_accuracy(algo.get_module("shared"), args)
    finally:
        algo.stop()
        ray.shutdown()
    print(f"held-out consensus accuracy: untrained {untrained:.3f}, after PPO {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main(tyro.cli(Args))
