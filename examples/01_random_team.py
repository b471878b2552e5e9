"""01: a team taking random meta-actions, step by step, with the env's ANSI rendering.

The first thing to read: one episode of the Dec-POMDP, what each agent observes, and the
decomposed reward it receives.

    python examples/01_random_team.py [--team simulated|smollm2] [--episodes 2]

Runtime: about 1 s on 2 CPU cores with the simulated team (measured once, 2026-11-25, on a
shared 2-core Intel Xeon).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tyro

import deliberation_env as de


@dataclass
class Args:
    team: str = "simulated"
    """``simulated`` (instant, no LLM) or ``smollm2`` (a real LLM team, slower)."""
    episodes: int = 2
    """Episodes to play."""
    max_rounds: int = 3
    """Rounds per episode."""
    seed: int = 0
    """Seed of the env and of the random actions."""


def main(args: Args) -> None:
    env = de.parallel_env(task="arithmetic", team=args.team, n_agents=3, max_rounds=args.max_rounds,
                          render_mode="ansi")
    rng = np.random.default_rng(args.seed)
    print("observation of one agent:", env.observation_space("agent_0"))
    print("self features:", ", ".join(de.SELF_FEATURES))
    print("peer features:", ", ".join(de.PEER_FEATURES))
    for episode in range(args.episodes):
        _obs, infos = env.reset(seed=args.seed + episode)
        print(f"\n=== episode {episode} ===\n{env.render()}")
        while env.agents:
            actions = {a: de.MetaAction(int(rng.integers(3))) for a in env.agents}
            _obs, rewards, _terminations, _truncations, infos = env.step(actions)
            print("\n" + env.render())
            for agent, reward in rewards.items():
                parts = infos[agent]["reward_components"]
                print(f"  {agent}: {actions[agent].name:<8} reward {reward:+.2f} "
                      f"(local {parts['local']:+.0f}, global {parts['global']:+.0f})")
        print(f"team reward: {infos['agent_0']['team_reward']:.0f}")


if __name__ == "__main__":
    main(tyro.cli(Args))
