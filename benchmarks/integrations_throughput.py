"""Env steps per second through each ecosystem tool's wrapper, against the raw env, same run.

An env step is one joint step of the whole team (every agent acts once). Every
measurement plays whole episodes of the simulated team (3 agents, 3 rounds, uniformly
random actions) for about ``--seconds`` of wall time, resets included, and divides the env
steps played by the time taken. The rows are measured round-robin ``--repeats`` times and
each row reports its best rate, so that load from other processes, which comes and goes,
biases no row against another. The raw env is timed in both of its observation modes;
every tool gets ``observation="flat", infos="numeric"`` (the mode they consume as is):

- SuperSuit: ``frame_stack_v1`` on the parallel env, and ``pettingzoo_env_to_vec_env_v1``
  (the Markov vector env that stable-baselines3 sees);
- TorchRL: ``PettingZooWrapper`` (what BenchMARL builds too) and ``SerialEnv`` of 4 of them,
  through ``rollout`` with random actions;
- RLlib: ``ParallelPettingZooEnv`` sampled by the new API stack's ``MultiAgentEnvRunner``
  (connectors, episodes, the shared policy's forward pass), with the default
  ``episodes_to_numpy=True`` and with ``False``.

Writes ``benchmarks/results/integrations_throughput.json``. Needs the ``integrations`` extra::

    python benchmarks/integrations_throughput.py [--seconds 3] [--repeats 5]
"""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tyro
from results import write_results

import deliberation_env as de

N_AGENTS, MAX_ROUNDS = 3, 3
FLAT = {"team": "simulated", "n_agents": N_AGENTS, "max_rounds": MAX_ROUNDS, "observation": "flat", "infos": "numeric"}


@dataclass
class Args:
    seconds: float = 3.0
    """Wall time per measurement."""
    repeats: int = 5
    """Round-robin passes over the rows; each row reports its best."""


def timed(seconds: float, play: Callable[[], int]) -> float:
    """Env steps per second of repeated ``play()`` calls (each returns the env steps it played)."""
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += play()
    return steps / (time.perf_counter() - start)


def parallel_episodes(env, rng: np.random.Generator) -> Callable[[], int]:
    """Play one episode of a PettingZoo parallel env with random actions."""

    def play() -> int:
        env.reset()
        steps = 0
        while env.agents:
            env.step({a: int(rng.integers(3)) for a in env.agents})
            steps += 1
        return steps

    return play


def raw(**kwargs) -> Callable[[], int]:
    env = de.parallel_env(team="simulated", n_agents=N_AGENTS, max_rounds=MAX_ROUNDS, **kwargs)
    env.reset(seed=0)
    return parallel_episodes(env, np.random.default_rng(0))


def supersuit_frame_stack() -> Callable[[], int]:
    from supersuit import frame_stack_v1

    env = frame_stack_v1(de.parallel_env(**FLAT), 4)
    env.reset(seed=0)
    return parallel_episodes(env, np.random.default_rng(0))


def supersuit_markov_vec_env() -> Callable[[], int]:
    from supersuit import pettingzoo_env_to_vec_env_v1

    venv = pettingzoo_env_to_vec_env_v1(de.parallel_env(**FLAT))  # auto-resets at episode end
    venv.reset(seed=0)
    rng = np.random.default_rng(0)

    def play() -> int:
        venv.step(rng.integers(0, 3, venv.num_envs))
        return 1

    return play


def torchrl(num_envs: int) -> Callable[[], int]:
    from torchrl.envs import SerialEnv
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    def make():
        return PettingZooWrapper(de.parallel_env(**FLAT), return_state=True)

    env = make() if num_envs == 1 else SerialEnv(num_envs, make)
    env.set_seed(0)

    def play() -> int:
        rollout = env.rollout(MAX_ROUNDS * 10, break_when_any_done=False)
        return rollout.numel()  # batch (num_envs, T): one env step each

    return play


def rllib(episodes_to_numpy: bool) -> Callable[[], int]:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    register_env("deliberation", lambda config: ParallelPettingZooEnv(de.parallel_env(**config)))
    config = (
        PPOConfig()
        .environment("deliberation", env_config=FLAT)
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "shared")
        .env_runners(num_env_runners=0, episodes_to_numpy=episodes_to_numpy)
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config=config)

    def play() -> int:
        episodes = runner.sample(num_timesteps=MAX_ROUNDS * 20, random_actions=False)
        return sum(episode.env_steps() for episode in episodes)

    return play


def main(args: Args) -> None:
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    plays = {
        "raw env, Dict observation + rich infos (default)": raw(),
        "raw env, observation='flat', infos='numeric'": raw(observation="flat", infos="numeric"),
        "SuperSuit frame_stack_v1(4)": supersuit_frame_stack(),
        "SuperSuit pettingzoo_env_to_vec_env_v1": supersuit_markov_vec_env(),
        "TorchRL PettingZooWrapper (BenchMARL's too)": torchrl(1),
        "TorchRL SerialEnv(4, PettingZooWrapper)": torchrl(4),
        "RLlib MultiAgentEnvRunner, episodes_to_numpy=True (default)": rllib(True),
        "RLlib MultiAgentEnvRunner, episodes_to_numpy=False": rllib(False),
    }
    best = dict.fromkeys(plays, 0.0)
    for _ in range(args.repeats):
        for name, play in plays.items():
            best[name] = max(best[name], timed(args.seconds, play))
    ray.shutdown()
    reference = best["raw env, observation='flat', infos='numeric'"]
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, simulated team, "
          f"{N_AGENTS} agents, {MAX_ROUNDS} rounds, best of {args.repeats} x {args.seconds:g} s per row")
    print(f"{'through':<62}{'env steps/s':>12}{'x flat raw':>12}")
    for name, rate in best.items():
        print(f"{name:<62}{rate:>12.0f}{rate / reference:>12.2f}")
    record = {
        "args": dataclasses.asdict(args),
        "n_agents": N_AGENTS,
        "max_rounds": MAX_ROUNDS,
        "rows": [{"through": name, "env_steps_per_s": rate, "x_flat_raw": rate / reference} for name, rate in best.items()],
    }
    write_results("integrations_throughput", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
