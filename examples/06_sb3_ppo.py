"""06: stable-baselines3 PPO with parameter sharing, through SuperSuit.

SuperSuit turns the parallel env into a vector env whose "envs" are the agents, so one
SB3 PPO policy (a ``MultiInputPolicy`` over the ``self`` / ``peers`` dict) acts for every
agent: parameter sharing. The trained model is then evaluated greedily on held-out
problems through ``de.vector_env(split="test")``. Run
``python examples/06_sb3_ppo.py --total-timesteps 512`` for a quick check.

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): about 7
minutes with the defaults (20,000 agent-steps of PPO); the tests' settings
(``--total-timesteps 256 --num-copies 2 --eval-problems 10``) take about 8 s.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import supersuit as ss
import tyro
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import set_random_seed
from tqdm.auto import tqdm

import deliberation_env as de


@dataclass
class Args:
    total_timesteps: int = 20_000
    """Agent-steps of PPO training."""
    num_copies: int = 8
    """Copies of the env stepped together (each holds n_agents SB3 "envs")."""
    eval_problems: int = 200
    """Held-out problems to evaluate on."""
    seed: int = 0
    """Seed of PPO and of the evaluation."""


ENV_KWARGS = {"task": "arithmetic", "team": "simulated", "n_agents": 3, "max_rounds": 3}


class ProgressBar(BaseCallback):
    """PPO's agent-steps done of the run's total and what it is doing, with a rate and an
    ETA (tqdm, on stderr). PPO collects whole rollouts of ``n_steps`` per SB3 "env"
    (agent), so the total is rounded up to them."""

    def _on_training_start(self) -> None:
        rollout = self.model.n_steps * self.training_env.num_envs
        total = -(-self.locals["total_timesteps"] // rollout) * rollout
        self.bar = tqdm(total=total, desc="PPO", unit="agent-step")

    def _on_rollout_start(self) -> None:
        self.bar.set_postfix_str("collecting")

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)  # one step of every SB3 "env" (agent)
        return True

    def _on_rollout_end(self) -> None:
        self.bar.set_postfix_str("updating the policy")

    def _on_training_end(self) -> None:
        self.bar.close()


def evaluate(model: PPO, num_problems: int, seed: int) -> float:
    """Share of held-out problems whose final consensus is correct, greedy actions."""
    venv = de.vector_env(num_problems, split="test", **ENV_KWARGS)
    obs, infos = venv.reset(seed=seed, options={"problem_index": list(range(num_problems))})
    for _ in range(venv.max_rounds):
        actions = {agent: model.predict(obs[agent], deterministic=True)[0] for agent in venv.agents}
        obs, _, _, _, infos = venv.step(actions)
    return float(np.mean([env_infos[venv.agents[0]]["team_reward"] for env_infos in infos]))


def main(args: Args) -> float:
    set_random_seed(args.seed)  # SuperSuit's ConcatVecEnv has no seed() for PPO(seed=...) to call
    env = ss.pettingzoo_env_to_vec_env_v1(de.parallel_env(**ENV_KWARGS))
    env = ss.concat_vec_envs_v1(env, args.num_copies, num_cpus=0, base_class="stable_baselines3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SB3 warns about SuperSuit's vec env wrapper
        model = PPO(
            "MultiInputPolicy", env, n_steps=64, batch_size=128, learning_rate=3e-4, verbose=0
        )
        untrained = evaluate(model, args.eval_problems, args.seed)
        model.learn(total_timesteps=args.total_timesteps, callback=ProgressBar())
    accuracy = evaluate(model, args.eval_problems, args.seed)
    print(f"held-out consensus accuracy: untrained {untrained:.3f}, after PPO {accuracy:.3f}")
    env.close()
    return accuracy


if __name__ == "__main__":
    main(tyro.cli(Args))
