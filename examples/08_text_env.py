"""08: the text-action env: a frozen team writes the actions, the env scores them.

In the meta-action env (examples 01-07) the LLMs are part of the environment. Here they
are the agents: each action is a completion. A frozen team is any backend behind
``agents.TextPolicy``; this example uses a tiny scripted backend (it reads the sum in
the question and, seeded by the request, sometimes slips by one) so it runs instantly,
or SmolLM2 with ``--backend smollm2`` (responses cached in SQLite).

    python examples/08_text_env.py [--episodes 3] [--max-turns 2] [--backend scripted|smollm2]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tyro

from agents import CachedBackend, Generation, make_backend
from agents.cache import DEFAULT_CACHE_PATH
from agents.text_policy import TextPolicy
from deliberation_env.text import text_env


class ScriptedSolver:
    """A text backend for arithmetic sums: right, or off by one when its seed says so."""

    model_id = "scripted:sum"
    supports_logprobs = False

    def generate(self, requests):
        completions = []
        for request in requests:
            question = request.messages[-1]["content"]
            total = sum(map(int, re.findall(r"\d+", question.split("?")[0])))
            slip = 1 if request.seed % 3 == 0 else 0
            completions.append(Generation(f"Adding the numbers gives {total + slip}. The answer is {total + slip}.", 0, 0, "stop"))
        return completions

    def next_token_logprobs(self, requests):
        raise NotImplementedError("the scripted solver has no log-probabilities")


@dataclass
class Args:
    episodes: int = 3
    """Episodes (problems) to play."""
    n_agents: int = 3
    """Solvers in the team."""
    max_turns: int = 2
    """Turns per episode; from turn 2 on each prompt shows the peers' answers."""
    backend: str = "scripted"
    """``scripted`` (instant) or ``smollm2`` (SmolLM2-135M-Instruct through llama.cpp)."""
    seed: int = 0
    """Seed of the env (problems and episode seeds)."""


def main(args: Args) -> None:
    backend = ScriptedSolver() if args.backend == "scripted" else CachedBackend(
        make_backend("llamacpp"), path=DEFAULT_CACHE_PATH
    )
    policy = TextPolicy(backend, max_tokens=128)
    env = text_env(task="arithmetic", n_agents=args.n_agents, max_turns=args.max_turns, render_mode="ansi")
    obs, infos = env.reset(seed=args.seed)
    for episode in range(args.episodes):
        print(f"=== episode {episode}: first prompt of agent_0 ===\n{obs['agent_0']}\n")
        while env.agents:
            obs, rewards, _, _, infos = env.step(policy.act(obs, infos))
            print(env.render())
            contributions = {a: round(infos[a]["reward_components"]["contribution"], 3) for a in env.possible_agents}
            print(f"reward {rewards['agent_0']:.3f}; leave-one-out contributions {contributions}\n")
        obs, infos = env.reset()


if __name__ == "__main__":
    main(tyro.cli(Args))
