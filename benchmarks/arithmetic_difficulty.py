"""Round-0 accuracy of a 3-agent SmolLM2 team at each arithmetic difficulty.

Deliberation is only interesting where agents disagree: this finds the levels at which
the default team (SmolLM2-135M-Instruct through llama.cpp, the agent's default
sampling unless ``--temperature`` / ``--max-tokens`` say otherwise) is neither always right nor always wrong. One vector env per level solves the
first ``num_problems`` test problems (round 0 only: solve and introspection). Writes
``benchmarks/results/arithmetic_difficulty.json``.

    python benchmarks/arithmetic_difficulty.py [--num-problems 24] [--temperature 0.7] [--cache PATH]
"""

from __future__ import annotations

import dataclasses
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro
from results import write_results

import deliberation_env as de
from agents import CachedBackend, LLMAgent
from agents.llamacpp_backend import LlamaCppBackend


@dataclass
class Args:
    num_problems: int = 24
    """Test problems per level (the first ones of the split)."""
    n_agents: int = 3
    """Team size."""
    levels: tuple[int, ...] = (1, 2, 3, 4, 5)
    """Arithmetic difficulty levels to measure."""
    temperature: float = 0.7
    """Sampling temperature of the agents (the LLMAgent default)."""
    max_tokens: int = 256
    """Most tokens per solution (the LLMAgent default)."""
    cache: Path = Path("runs/benchmark_cache.sqlite")
    """Response cache (re-runs are free)."""


def measure(agent: LLMAgent, level: int, args: Args) -> dict[str, float]:
    venv = de.vector_env(
        args.num_problems,
        task="arithmetic",
        task_kwargs={"difficulty": level},
        team=agent,
        n_agents=args.n_agents,
        max_rounds=1,
        split="test",
    )
    start = time.perf_counter()
    _, infos = venv.reset(seed=0, options={"problem_index": list(range(args.num_problems))})
    seconds = time.perf_counter() - start
    agents = venv.possible_agents
    correct = np.array([[info[a]["correct"] for a in agents] for info in infos], dtype=bool)
    decisions = [[info[a]["decision"] for a in agents] for info in infos]
    return {
        "accuracy": correct.mean(),
        "parsed": np.mean([d is not None for row in decisions for d in row]),
        "all_right": correct.all(axis=1).mean(),
        "all_wrong": (~correct).all(axis=1).mean(),
        "disagree": np.mean([len(set(row)) > 1 for row in decisions]),
        "consensus": np.mean([info[agents[0]]["consensus_correct"] for info in infos]),
        "seconds": seconds,
    }


def main(args: Args) -> None:
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    agent = LLMAgent(
        CachedBackend(LlamaCppBackend(), args.cache),
        max_tokens=args.max_tokens,
        temperature=args.temperature,
    )
    print(
        f"# arithmetic difficulty, {args.n_agents} x {agent.model_id}, max_tokens {agent.max_tokens}, "
        f"T={agent.temperature}, {args.num_problems} test problems per level, "
        f"{platform.machine()}, {time.strftime('%Y-%m-%d')}"
    )
    print(
        "| level | agent accuracy | parsed | all agents right | all agents wrong | agents disagree "
        "| plurality correct | seconds |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    levels = {}
    for level in args.levels:
        m = levels[level] = measure(agent, level, args)
        print(
            f"| {level} | {m['accuracy']:.2f} | {m['parsed']:.2f} | {m['all_right']:.2f} | "
            f"{m['all_wrong']:.2f} | {m['disagree']:.2f} | {m['consensus']:.2f} | {m['seconds']:.0f} |",
            flush=True,
        )
    record = {
        "args": dataclasses.asdict(args),
        "model": agent.model_id,
        "max_tokens": agent.max_tokens,
        "temperature": agent.temperature,
        "levels": levels,
    }
    write_results("arithmetic_difficulty", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
