"""05: bring your own algorithm: REINFORCE on the env API alone, in under 80 lines.

Nothing from ``algorithms/``: a linear-softmax meta-policy shared by all agents reads
``obs[agent]["self"]`` and the peer rows, samples PERSIST / REFINE / CONCEDE every round
through ``de.vector_env``, and follows the REINFORCE gradient of each agent's episode
return with the batch mean as baseline. Run ``python examples/05_custom_learner.py --updates 3``.

Runtime: about 15 s on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Xeon).
"""

from dataclasses import dataclass

import numpy as np
import torch
import tyro

import deliberation_env as de


@dataclass
class Args:
    updates: int = 40
    """Policy updates (each plays ``num_envs`` episodes)."""
    num_envs: int = 64
    """Episodes per update."""
    learning_rate: float = 0.05
    """Adam learning rate."""
    seed: int = 0
    """Seed of the problems, the policy and its sampling."""


def features(obs: dict, agent: str) -> torch.Tensor:
    """An agent's own features, then the mean and the max of its peer rows: any team size."""
    own, peers = obs[agent]["self"], obs[agent]["peers"]
    return torch.as_tensor(np.concatenate([own, peers.mean(1), peers.max(1)], axis=1))


def main(args: Args) -> float:
    torch.manual_seed(args.seed)
    venv = de.vector_env(args.num_envs, task="arithmetic", team="simulated", max_rounds=3)
    size = len(de.SELF_FEATURES) + 2 * len(de.PEER_FEATURES)
    policy = torch.nn.Linear(size, venv.action_space(venv.agents[0]).n)  # one policy, all agents
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate)
    for update in range(args.updates):
        obs, _ = venv.reset(seed=args.seed + update)
        logps = {agent: [] for agent in venv.agents}
        returns = {agent: np.zeros(args.num_envs) for agent in venv.agents}
        done = False
        while not done:
            actions = {}
            for agent in venv.agents:
                dist = torch.distributions.Categorical(logits=policy(features(obs, agent)))
                action = dist.sample()
                logps[agent].append(dist.log_prob(action))
                actions[agent] = action.numpy()
            obs, rewards, terminations, _, infos = venv.step(actions)
            for agent in venv.agents:
                returns[agent] += rewards[agent]
            done = all(terminations[agent].all() for agent in venv.agents)
        episode_returns = torch.as_tensor(
            np.stack([returns[a] for a in venv.agents]), dtype=torch.float32
        )
        advantages = episode_returns - episode_returns.mean()  # (n_agents, num_envs)
        logp_sums = torch.stack([torch.stack(logps[a]).sum(0) for a in venv.agents])
        loss = -(logp_sums * advantages).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        team = np.mean([env_infos[venv.agents[0]]["team_reward"] for env_infos in infos])
        print(
            f"update {update:3d}  mean return {episode_returns.mean():+.3f}  "
            f"team accuracy {team:.3f}"
        )
    return float(team)


if __name__ == "__main__":
    main(tyro.cli(Args))
