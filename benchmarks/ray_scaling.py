"""Rollout throughput on Ray workers (issue 13) with a latency-bound fake backend.

The figure is about the machinery, not this CPU: every agent is an :class:`agents.LLMAgent`
over :class:`LatencyBackend`, a documented fake that answers a batch of requests in
``latency_s`` per chunk of at most ``batch_limit`` requests (it sleeps, as a client of a
saturated model server waits; it computes nothing), with texts that depend only on the
request's seed. One rollout = ``reset`` + ``max_rounds`` steps with random actions of
``num_envs`` episodes; each phase sends ``num_envs * n_agents`` requests, so the
in-process env waits ``ceil(num_envs * n_agents / batch_limit) * latency_s`` per phase,
and N workers, each with its own backend (one server or GPU each), N times less.

Measured, best of ``repeats`` rollouts after one warm-up rollout (worker start-up is not
counted):

- episodes/s of the in-process env (``workers=0``) and of 1, 2, 4, 8 workers, and the
  speed-up of N workers over 1 (target: at least 0.8 N);
- the overhead per round trip: seconds per env call (reset or step) of 1 worker minus
  the in-process env's, with ``latency_s=0`` (nothing but the machinery).

``--part learner``: SoftRankPO on the simulated team (``learner_updates`` updates of 8
groups x 4) in process and on 1 and 2 workers: its wall time, and whether its metrics
are identical to the in-process run's (they must be: same seeds, same episodes).

    nice .venv/bin/python benchmarks/ray_scaling.py [--workers 1 2 4 8] [--latency-s 0.05]
    nice .venv/bin/python benchmarks/ray_scaling.py --part learner [--learner-updates 5]
    .venv/bin/python benchmarks/ray_scaling.py --part text --learner-updates 3

``--part team``: the meta-action env with the real SmolLM2 team on llama.cpp (``team_envs``
problems x 3 agents, one round after the initial solve, at most ``team_max_tokens`` new tokens,
no response cache): seconds per rollout in process with 1 llama.cpp thread (llama-cpp-python's
own default on 2 cores: half the cores) and with 2, then on 1 Ray worker with 2 threads and on 2
workers with 1 thread each.

    .venv/bin/python benchmarks/ray_scaling.py --part team

``--part text``: TextGRPO on SmolLM2-135M with LoRA (2 agents, 4 problems x G=4 per
update, 48 new tokens) sampling in process with 2 torch threads against 2 rollout
workers with 1 thread each (``algorithms.text.rollout_workers``; the adapters shipped
every update): seconds per update, and whether the metrics agree. Ray niceness: Ray
starts its workers at nice 15, so any other job on the machine starves them; run it alone.

Each part writes what it printed to ``benchmarks/results/ray_scaling-<part>.json``.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import time
from dataclasses import dataclass
from datetime import date

import numpy as np
import tyro
from results import write_results

import deliberation_env as de
from agents.base import Generation, LogprobResult
from agents.fingerprint import file_sha256, fingerprinted
from agents.llamacpp_backend import default_model_path


@dataclass
class LatencyBackend:
    """A fake model server: ``latency_s`` per chunk of ``batch_limit`` requests, no compute.

    Answers ``The answer is <seed % 10>.`` (a valid arithmetic answer) and scores the
    critic's candidates with fixed log-probabilities, so episodes are reproducible.
    """

    latency_s: float
    batch_limit: int
    model_id: str = "fake:latency"
    supports_logprobs: bool = True

    def _wait(self, count: int) -> None:
        time.sleep(self.latency_s * math.ceil(count / self.batch_limit))

    def generate(self, requests):
        """One completion per request, after the batch's latency."""
        self._wait(len(requests))
        return [Generation(f"Adding up.\nThe answer is {r.seed % 10}.", 30, 8, "stop") for r in requests]

    def next_token_logprobs(self, requests):
        """Fixed critic log-probabilities, after the batch's latency."""
        self._wait(len(requests))
        return [LogprobResult(tuple(-0.7 for _ in r.candidates), 30) for r in requests]


@dataclass
class Args:
    workers: tuple[int, ...] = (1, 2, 4, 8)
    """Worker counts to measure (the in-process env is always measured)."""
    num_envs: int = 64
    """Episodes per rollout."""
    n_agents: int = 3
    """Agents per team."""
    max_rounds: int = 2
    """Rounds per episode."""
    latency_s: float = 0.05
    """Fake latency per chunk of ``batch_limit`` requests."""
    batch_limit: int = 8
    """Most requests the fake serves per ``latency_s``."""
    repeats: int = 2
    """Timed rollouts per setting (the best counts)."""
    part: str = "scaling"
    """``scaling`` (the fake backend), ``learner`` (SoftRankPO, simulated team), ``team``
    (the real SmolLM2 team on llama.cpp) or ``text`` (an LLM-weight learner sampling on
    rollout workers)."""
    learner_updates: int = 5
    """Updates of the ``learner`` and ``text`` parts."""
    text_model: str = ""
    """``text`` part: the model ("" is SmolLM2-135M-Instruct; "tiny" checks the script)."""
    team_envs: int = 8
    """``team`` part: problems per rollout."""
    team_max_tokens: int = 64
    """``team`` part: most new tokens per answer."""


def rollout_seconds(venv, rounds: int, seed: int) -> float:
    """Wall time of one rollout: reset, then ``rounds`` steps of random actions."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    venv.reset(seed=seed)
    for _ in range(rounds):
        venv.step({agent: rng.integers(3, size=venv.num_envs) for agent in venv.agents})
    return time.perf_counter() - started


def best_rollout(args: Args, workers: int, latency_s: float) -> float:
    """Seconds of the best of ``args.repeats`` rollouts (after a warm-up) on ``workers``."""
    backend = LatencyBackend(latency_s, args.batch_limit)
    venv = de.vector_env(
        args.num_envs, workers=workers, task="arithmetic", team=backend, n_agents=args.n_agents,
        max_rounds=args.max_rounds,
    )
    rollout_seconds(venv, args.max_rounds, seed=0)
    best = min(rollout_seconds(venv, args.max_rounds, seed=1 + k) for k in range(args.repeats))
    venv.close()
    return best


def learner_run(workers: int, updates: int) -> tuple[float, list[dict[str, float]]]:
    """Wall time (after the env is built) and metrics of SoftRankPO on ``workers`` workers."""
    import torch

    from algorithms.meta import SoftRankPO, SoftRankPOConfig

    torch.set_num_threads(1)  # as the training harness: tiny networks, threads cost more than they give
    config = SoftRankPOConfig(groups_per_update=8, group_size=4)
    venv = de.vector_env(config.num_envs, workers=workers, task="arithmetic", team="simulated", difficulty=3)
    learner = SoftRankPO(config, venv)
    started = time.perf_counter()
    metrics = [learner.train_step() for _ in range(updates)]
    seconds = time.perf_counter() - started
    venv.close()
    return seconds, [{k: v for k, v in m.items() if k != "charts/sps"} for m in metrics]


def learner_part(args: Args) -> dict:
    """The ``learner`` part: wall time on 0, 1, 2 workers and identical metrics."""
    local_seconds, local_metrics = learner_run(0, args.learner_updates)
    team_reward = local_metrics[-1]["rewards/team/mean"]
    print(f"| in-process | {local_seconds:.1f} s | team reward {team_reward:.3f} |")
    rows = []
    for workers in (1, 2):
        seconds, metrics = learner_run(workers, args.learner_updates)
        rows.append({"workers": workers, "seconds": seconds, "identical_metrics": metrics == local_metrics})
        print(f"| {workers} workers | {seconds:.1f} s | identical metrics: {metrics == local_metrics} |")
    return {"in_process": {"seconds": local_seconds, "team_reward": team_reward}, "workers": rows}


def text_run(workers: int, threads: int, args: Args) -> tuple[list[float], list[dict[str, float]]]:
    """Seconds per update and metrics of TextGRPO (2 agents, LoRA) sampling in this process
    with ``threads`` torch threads (``workers=0``) or on ``workers`` rollout workers with
    ``threads`` threads each (the learner's own passes then use every core)."""
    import functools

    import torch

    from algorithms.text import TextGRPO, TextGRPOConfig
    from algorithms.text.config import TextEnvConfig
    from algorithms.text.config import text_run as text_run_config
    from algorithms.text.rollout_workers import RolloutWorkers
    from algorithms.text.train import build_env, build_lm

    config = TextGRPOConfig(
        env=TextEnvConfig(task_kwargs={"difficulty": 1}, n_agents=2), run=text_run_config(progress=False),
        model=args.text_model, groups_per_update=4, group_size=4, max_new_tokens=48, temperature=0.7, learning_rate=5e-4,
    )  # fmt: skip
    venv = build_env(config, config.num_envs)
    agents = list(venv.possible_agents)
    lm = build_lm(config, agents)
    sampler = None
    if workers:
        sampler = RolloutWorkers(functools.partial(build_lm, config, agents), workers, lm, threads=threads)
    torch.set_num_threads(threads if not workers else 2)
    learner = TextGRPO(config, lm, venv, sampler=sampler)
    seconds, metrics = [], []
    for _ in range(args.learner_updates):
        started = time.perf_counter()
        # timing and memory (charts/seconds, perf/*) differ between the two ways of sampling
        metrics.append({k: v for k, v in learner.train_step().items() if k != "charts/seconds" and not k.startswith("perf/")})
        seconds.append(time.perf_counter() - started)
    if sampler is not None:
        sampler.close()
    return seconds, metrics


def text_part(args: Args) -> dict:
    """The ``text`` part: an LLM-weight learner's update on 2 rollout workers x 1 thread
    against sampling in process with 2 threads; the same metrics on both."""
    print("| sampling | s/update, each | mean | rewards/joint/mean per update |")
    print("|---|---|---:|---|")
    runs, rows = {}, []
    for name, workers, threads in (("in process, 2 threads", 0, 2), ("2 rollout workers x 1 thread", 2, 1)):
        seconds, metrics = text_run(workers, threads, args)
        runs[name] = metrics
        joint = [m["rewards/joint/mean"] for m in metrics]
        rows.append({"sampling": name, "seconds_per_update": seconds, "mean_seconds": np.mean(seconds), "joint_reward": joint})
        rewards = ", ".join(f"{m['rewards/joint/mean']:.3f}" for m in metrics)
        each = ", ".join(f"{s:.1f}" for s in seconds)
        print(f"| {name} | {each} | {np.mean(seconds):.1f} | {rewards} |", flush=True)
    first, second = runs.values()
    same = all(a.keys() == b.keys() and all(math.isclose(a[k], b[k], abs_tol=1e-5) for k in a) for a, b in zip(first, second))
    print(f"same metrics (within 1e-5): {same}")
    return {"runs": rows, "same_metrics": same}


class ThreadedLlama:
    """The bundled SmolLM2 on llama.cpp with ``n_threads`` decoding threads, loaded on first
    use, so that the unloaded backend can be shipped to a Ray worker as a team."""

    supports_logprobs = True

    def __init__(self, n_threads: int) -> None:
        model_id = fingerprinted("llamacpp:SmolLM2-135M-Instruct-Q4_1", file_sha256(default_model_path()))
        self.n_threads, self.model_id, self._backend = n_threads, model_id, None

    def _loaded(self):
        from agents.llamacpp_backend import LlamaCppBackend

        if self._backend is None:
            self._backend = LlamaCppBackend(n_threads=self.n_threads)
        return self._backend

    def generate(self, requests):
        return self._loaded().generate(requests)

    def next_token_logprobs(self, requests):
        return self._loaded().next_token_logprobs(requests)


def team_part(args: Args) -> dict:
    """The ``team`` part: the llama.cpp team's rollouts in process and on Ray workers."""
    from agents import SMOLLM2_TEMPERATURE, LLMAgent

    print(f"| meta-action env, SmolLM2 on llama.cpp, {args.team_envs} problems x 3 agents | s/rollout | tokens |")
    print("|---|---:|---:|")
    rows = []
    for name, workers, threads in (
        ("in process, 1 thread (llama-cpp-python's default on 2 cores)", 0, 1),
        ("in process, 2 threads (ours on 2 cores: every usable CPU)", 0, 2),
        ("1 Ray worker x 2 threads", 1, 2),
        ("2 Ray workers x 1 thread", 2, 1),
    ):
        team = LLMAgent(ThreadedLlama(threads), temperature=SMOLLM2_TEMPERATURE, max_tokens=args.team_max_tokens)
        venv = de.vector_env(args.team_envs, workers=workers, task="arithmetic", team=team, max_rounds=1)
        venv.reset(options={"problem_index": [0] * args.team_envs})  # warm-up: the model loads (untimed)
        started = time.perf_counter()
        _, infos = venv.reset(seed=1, options={"problem_index": list(range(args.team_envs))})
        tokens = sum(info[a]["tokens"]["total"] for info in infos for a in venv.agents)
        _, _, _, _, infos = venv.step({agent: np.ones(args.team_envs, dtype=int) for agent in venv.agents})
        seconds = time.perf_counter() - started
        tokens += sum(info[a]["tokens"]["total"] for info in infos for a in venv.agents)
        print(f"| {name} | {seconds:.1f} | {tokens} |", flush=True)
        rows.append({"setting": name, "workers": workers, "threads": threads, "seconds": seconds, "tokens": tokens})
        if workers:
            venv.close()
    return {"rows": rows}


def scaling_part(args: Args) -> dict:
    """The ``scaling`` part: episodes/s on the fake backend in process and on N workers,
    and the overhead per round trip."""
    episodes = args.num_envs
    local = best_rollout(args, 0, args.latency_s)
    print(f"| in-process | {local:.2f} s | {episodes / local:.1f} episodes/s | |")
    one, rows = None, []
    for workers in args.workers:
        seconds = best_rollout(args, workers, args.latency_s)
        if workers == 1:
            one = seconds
        speedup = f"{one / seconds:.2f} x ({one / seconds / workers:.2f} N)" if one else ""
        print(f"| {workers} workers | {seconds:.2f} s | {episodes / seconds:.1f} episodes/s | {speedup} |")
        rows.append(
            {
                "workers": workers,
                "seconds": seconds,
                "episodes_per_s": episodes / seconds,
                "speedup_over_1_worker": one / seconds if one else None,
            }
        )
    calls = 1 + args.max_rounds
    local0, remote0 = best_rollout(args, 0, 0.0), best_rollout(args, 1, 0.0)
    print(
        f"overhead per round trip (latency 0): in-process {1e3 * local0 / calls:.1f} ms per call, "
        f"1 worker {1e3 * remote0 / calls:.1f} ms, difference {1e3 * (remote0 - local0) / calls:.1f} ms"
    )
    return {
        "in_process": {"seconds": local, "episodes_per_s": episodes / local},
        "workers": rows,
        "ms_per_call_latency_0": {"in_process": 1e3 * local0 / calls, "one_worker": 1e3 * remote0 / calls},
    }


PARTS = {"scaling": scaling_part, "learner": learner_part, "text": text_part, "team": team_part}
"""The measurements ``--part`` picks."""


def main(args: Args) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"# ray_scaling, {date.today()}, {platform.machine()}; {args}")
    record = PARTS[args.part](args)
    ray.shutdown()
    write_results(f"ray_scaling-{args.part}", {"args": dataclasses.asdict(args), **record})


if __name__ == "__main__":
    main(tyro.cli(Args))
