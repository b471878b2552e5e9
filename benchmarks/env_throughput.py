"""Env throughput with the simulated team: agent-steps per second.

Measures the single parallel env, the vector env at num_envs 1..1024, and PettingZoo's
``rps_v2`` parallel env in the same run as a reference. Whole episodes are timed
(reset with its round-0 solve and introspection, then ``max_rounds`` steps of random
actions); an agent-step is one agent's action in one round. Writes
``benchmarks/results/env_throughput.json``.

    python benchmarks/env_throughput.py [--seconds 3] [--n-agents 3]
"""

from __future__ import annotations

import dataclasses
import platform
import time
from dataclasses import dataclass

import numpy as np
import tyro
from pettingzoo.classic import rps_v2
from results import write_results

import deliberation_env as de


@dataclass
class Args:
    seconds: float = 3.0
    """Wall time per measurement."""
    n_agents: int = 3
    """Team size."""
    max_rounds: int = 3
    """Rounds per episode."""
    sizes: tuple[int, ...] = (1, 4, 16, 64, 256, 1024)
    """Vector env sizes."""


def time_single(args: Args) -> float:
    env = de.parallel_env(team="simulated", n_agents=args.n_agents, max_rounds=args.max_rounds)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        env.reset(seed=steps)
        while env.agents:
            env.step({a: int(rng.integers(3)) for a in env.agents})
            steps += len(env.possible_agents)
    return steps / (time.perf_counter() - start)


def time_vector(args: Args, num_envs: int) -> tuple[float, float]:
    venv = de.vector_env(num_envs, team="simulated", n_agents=args.n_agents, max_rounds=args.max_rounds)
    rng = np.random.default_rng(0)
    steps, in_step, start = 0, 0.0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        venv.reset(seed=steps)
        for _ in range(args.max_rounds):
            actions = {a: rng.integers(0, 3, num_envs) for a in venv.agents}
            t0 = time.perf_counter()
            venv.step(actions)
            in_step += time.perf_counter() - t0
            steps += num_envs * args.n_agents
    return steps / (time.perf_counter() - start), steps / in_step


def time_rps(args: Args) -> float:
    env = rps_v2.parallel_env(max_cycles=args.max_rounds)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        env.reset(seed=steps)
        while env.agents:
            env.step({a: env.action_space(a).sample() for a in env.agents})
            steps += 2
    return steps / (time.perf_counter() - start)


def main(args: Args) -> None:
    print(f"# env throughput, {args.n_agents} agents, {args.max_rounds} rounds, "
          f"{platform.machine()} {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print("| env | num_envs | agent-steps/s (episodes) | agent-steps/s (step() only) |")
    print("|---|---:|---:|---:|")
    rps, single = time_rps(args), time_single(args)
    print(f"| pettingzoo rps_v2 (reference, 2 agents) | 1 | {rps:,.0f} | |")
    print(f"| deliberation parallel_env | 1 | {single:,.0f} | |")
    vector = []
    for size in args.sizes:
        episodes, step_only = time_vector(args, size)
        vector.append({"num_envs": size, "agent_steps_per_s": episodes, "step_only_agent_steps_per_s": step_only})
        print(f"| deliberation vector_env | {size} | {episodes:,.0f} | {step_only:,.0f} |")
    record = {
        "args": dataclasses.asdict(args),
        "rps_v2_agent_steps_per_s": rps,
        "parallel_env_agent_steps_per_s": single,
        "vector_env": vector,
    }
    write_results("env_throughput", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
