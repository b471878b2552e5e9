"""Result 4 of issue 4: SFT, then SoftRankPO, GRPO and MAGRPO on the real SmolLM2 team,
trained on cached rollouts.

A 3 x SmolLM2-135M-Instruct team (``team="smollm2"``: llama.cpp when BENCHMARKS.md's
numbers were measured, int8 CTranslate2 since 2026-11-25) on the default task
(arithmetic level 1), one deliberation round per episode. Generating text costs about
10 s per problem on 2 CPU cores (llama.cpp), so the learners cannot sample fresh LLM
outputs for thousands of episodes. They do not need to: an LLM agent's request is a
function of the episode seed, the problem and the history, and the cache serves a request
what it stored, so with a fixed pool of training problems and
episode seeds (the learner config's ``problem_pool`` and ``seed_pool``) every history a learner can
reach is generated once, stored in the response cache, and replayed from then on.

Phases (each resumes: re-running skips finished work)::

    python benchmarks/smollm2_learning.py --what warm     # generate the pool: ~60 min cold
    python benchmarks/smollm2_learning.py --what train    # SFT, then 3 learners x seeds, cached
    python benchmarks/smollm2_learning.py --what report   # held-out table (markdown + JSON)

``warm`` plays every training problem of the pool with all agents PERSISTing, REFINEing
and CONCEDEing (with one round, an agent's LLM calls depend only on its own action, so
these three cover all 27 joint actions), then evaluates the baselines on the held-out
problems. ``train`` prints how many responses it had to generate (0 once warm). Each phase
writes what it printed to ``benchmarks/results/smollm2_learning-<what>.json``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import tyro
from results import write_results
from scipy import stats
from tqdm.auto import tqdm

import deliberation_env as de
from agents.cache import DEFAULT_CACHE_PATH, cache_stats
from agents.seeding import derive_seed
from algorithms.core.checkpoints import CHECKPOINT
from algorithms.core.config import RunConfig
from algorithms.meta import PolicyGradientConfig, baselines
from algorithms.meta.compare import CompareConfig, compare
from algorithms.meta.evaluate import EvalResult, evaluate_rounds
from algorithms.meta.network import NetworkPolicy
from algorithms.meta.train import load_network
from deliberation_env import EnvConfig
from deliberation_env.meta.spaces import ACTION_NAMES

ENV = EnvConfig(team="smollm2", difficulty=1, max_rounds=1)
"""The default task and team of ``make run``, one round per episode."""

BASELINES = ("independent", "debate", "minority-concedes", "confidence-threshold", "oracle")
LEARNERS = ("softrankpo", "grpo", "magrpo")


@dataclass
class Args:
    what: Literal["warm", "train", "report"] = "report"
    """Which phase to run (see the module docstring)."""
    out_dir: str = "runs/benchmarks/smollm2-learning"
    """Where runs and results go."""
    problem_pool: int = 200
    """Training problems (the first ones of the training split)."""
    seed_pool: int = 1
    """Episode seeds per training problem."""
    eval_problems: int = 200
    """Held-out problems (the first ones of the test split; it has 200)."""
    seeds: int = 3
    """Training seeds of the learner."""
    sft_updates: int = 30
    """SFT updates (128 episodes each); 0 trains the learners from scratch (KL to the
    initial policy), in a different ``--out-dir``."""
    updates: int = 300
    """Updates of each policy-gradient learner (16 problems x 8 rollouts = 128 episodes each)."""


class Constant:
    """Every agent takes the same meta-action (for generating the pool)."""

    def __init__(self, action: de.MetaAction):
        self.action = action
        self.name = action.name.lower()

    def act(self, obs, infos):
        return baselines.constant_actions(obs, self.action)


def responses() -> int:
    """Rows in the response cache (generations + scorings)."""
    counts = cache_stats(DEFAULT_CACHE_PATH)
    return counts["generations"] + counts["logprobs"]


def warm(args: Args, num_envs: int = 8) -> dict:
    """Generate every LLM response the training pool and the held-out baselines need.

    Returns:
        The new responses and seconds of the pool alone and of the whole phase.
    """
    venv = de.vector_env_from(ENV, num_envs)
    pool = [(p, s) for s in range(args.seed_pool) for p in range(args.problem_pool)]
    before, start = responses(), time.perf_counter()
    for policy in map(Constant, de.MetaAction):
        for first in tqdm(range(0, len(pool), num_envs), desc=f"pool, {policy.name}", unit="batch"):
            chunk = pool[first : first + num_envs]
            chunk += [chunk[-1]] * (num_envs - len(chunk))
            obs, infos = venv.reset(
                options={"problem_index": [p for p, _ in chunk], "episode_seed": [s for _, s in chunk]}
            )
            while venv.active.any():
                obs, _, _, _, infos = venv.step(policy.act(obs, infos))
    pool = {"pool_new_responses": responses() - before, "pool_seconds": time.perf_counter() - start}
    print(f"pool: {pool['pool_new_responses']} new responses in {pool['pool_seconds']:.0f} s")
    test = de.vector_env_from(ENV, num_envs, split="test")
    for name in BASELINES:
        evaluate_rounds(baselines.get(name), test, range(args.eval_problems))
    new, seconds = responses() - before, time.perf_counter() - start
    print(f"total: {new} new responses in {seconds:.0f} s")
    return {"args": dataclasses.asdict(args), **pool, "new_responses": new, "seconds": seconds}


def trained(args: Args) -> tuple[str, ...]:
    """The comparison's algorithms: the SFT warm start (if any) and the three learners."""
    return ("sft", *LEARNERS) if args.sft_updates else LEARNERS


def compare_config(args: Args) -> CompareConfig:
    """SFT on oracle actions (128 episodes per update, the learners' batch), then SoftRankPO,
    GRPO and MAGRPO, each with a KL to the SFT policy: same pool, same budget, same held-out
    episodes."""
    return CompareConfig(
        algos=trained(args),
        seeds=args.seeds,
        learner=PolicyGradientConfig(
            env=ENV,
            run=RunConfig(
                updates=args.updates,
                eval_interval=max(1, args.updates // 10),
                eval_problems=args.eval_problems,
                progress=False,
                resume=True,  # a re-run continues the runs in out_dir (refused if their settings differ)
            ),
            sft_updates=args.sft_updates,
            problem_pool=args.problem_pool,
            seed_pool=args.seed_pool,
            groups_per_update=16,
            group_size=8,
            kl_coef=0.02,
        ),
        out_dir=args.out_dir,
    )


def run_training(args: Args) -> dict:
    """The comparison's summary, its seconds and the responses it had to generate."""
    before, start = responses(), time.perf_counter()
    summary = compare(compare_config(args))
    new, seconds = responses() - before, time.perf_counter() - start
    print(json.dumps(summary, indent=2))
    print(f"{seconds:.0f} s, {new} responses generated")
    return {"args": dataclasses.asdict(args), "summary": summary, "seconds": seconds, "new_responses": new}


COMPARED_WITH = ("debate", "minority-concedes")
"""The baselines every learned policy is compared with, problem by problem."""


def paired_difference(runs: list[EvalResult], baseline: EvalResult) -> tuple[float, float]:
    """Mean and 95% half-width of the runs' (seed-averaged) minus the baseline's consensus
    accuracy, paired by problem (all were evaluated on identical episodes)."""
    learned = np.mean([r.final_consensus for r in runs], axis=0)
    d = learned - np.asarray(baseline.final_consensus, dtype=float)
    return float(d.mean()), 1.96 * float(d.std(ddof=1) / np.sqrt(len(d)))


def row(result: EvalResult) -> dict[str, float]:
    return {
        "consensus_accuracy": result.consensus_accuracy[-1],
        "accuracy": result.accuracy[-1],
        "tokens_per_problem": result.tokens_per_problem,
        **{f"{action}_share": share for action, share in result.action_shares.items()},
    }


def hindsight_ceiling(problems: range) -> float:
    """Consensus accuracy of the best joint action per problem, found by trying all of them.

    With one round there are 3 ** n_agents joint actions; the held-out episodes are cached,
    so this costs no generation. No policy, privileged or not, can do better.
    """
    joint = list(itertools.product(de.MetaAction, repeat=ENV.n_agents))
    venv = de.vector_env_from(ENV, len(joint), split="test")
    best = []
    for k in tqdm(problems, desc="hindsight ceiling", unit="problem", leave=False):
        seed = derive_seed(0, venv.problems[k].id)  # evaluate_rounds()'s episode seed for eval seed 0
        venv.reset(options={"problem_index": [k] * len(joint), "episode_seed": [seed] * len(joint)})
        actions = np.array(joint, dtype=np.int64)
        *_, infos = venv.step({a: actions[:, i] for i, a in enumerate(venv.agents)})
        best.append(max(info[venv.agents[0]]["consensus_correct"] for info in infos))
    return float(np.mean(best))


def checkpoints(args: Args, algo: str) -> list[Path]:
    """The final checkpoint of every seed of ``algo`` in the comparison's directory."""
    run = Path(args.out_dir) / ("sft" if algo == "sft" else f"scale1/{algo}")
    return [run / f"seed{seed}" / CHECKPOINT for seed in range(args.seeds)]


def observation_signal(split: str, problems: range, seeds: list[int]) -> dict[str, float]:
    """What a non-privileged policy has to go on, on ``split``'s cached episodes.

    AUC of round-0 features for the agent's own correctness (0.5: no information; below
    0.5: informative with the opposite sign), and what REFINE does to answers.
    """
    venv = de.vector_env_from(ENV, len(problems), split=split)
    obs, infos = venv.reset(options={"problem_index": list(problems), "episode_seed": seeds})
    features = np.concatenate([obs[a]["self"] for a in venv.agents])
    before = np.concatenate([[info[a]["correct"] for info in infos] for a in venv.agents])
    signal = {"own_accuracy": float(before.mean())}
    for name in ("confidence", "peer_agree_share"):
        x = features[:, de.SELF_FEATURES.index(name)]
        u = stats.mannwhitneyu(x[before], x[~before]).statistic
        signal[f"auc_{name}"] = float(u / (before.sum() * (~before).sum()))
    *_, infos = venv.step(baselines.constant_actions(obs, de.MetaAction.REFINE))
    after = np.concatenate([[info[a]["correct"] for info in infos] for a in venv.agents])
    signal["refine_fixes"] = int((~before & after).sum())
    signal["refine_breaks"] = int((before & ~after).sum())
    signal["answers"] = len(before)
    return signal


def report(args: Args) -> dict:
    """Held-out results of the learners (every seed's greedy policy) and the baselines.

    A learner's row averages its seeds; its paired difference to a baseline averages the
    seeds' per-problem consensus correctness first, so its CI covers the choice of problems.
    """
    test = de.vector_env_from(ENV, 8, split="test")
    problems = range(args.eval_problems)
    results = {name: [evaluate_rounds(baselines.get(name), test, problems, progress=False)] for name in BASELINES}
    for algo in trained(args):
        paths = checkpoints(args, algo)
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise SystemExit(f"missing checkpoints {missing}: run --what train first")
        results[algo] = [
            evaluate_rounds(NetworkPolicy(load_network(p, ENV), list(test.agents), name=algo), test, problems, progress=False)
            for p in paths
        ]
    rows = {name: {k: float(np.mean([row(r)[k] for r in runs])) for k in row(runs[0])} for name, runs in results.items()}
    differences = {
        algo: {b: list(paired_difference(results[algo], results[b][0])) for b in COMPARED_WITH}
        for algo in trained(args)
    }
    ceiling = hindsight_ceiling(problems)
    signal = {
        "train pool": observation_signal("train", range(args.problem_pool), [0] * args.problem_pool),
        "held-out": observation_signal(
            "test", problems, [derive_seed(0, test.problems[k].id) for k in problems]
        ),
    }
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.system()}",
        "args": dataclasses.asdict(args),
        "held_out": rows,
        "paired_differences": differences,
        "hindsight_ceiling": ceiling,
        "observation_signal": signal,
    }
    (Path(args.out_dir) / "results.json").write_text(json.dumps(result, indent=2))
    print("| policy | consensus acc. | mean individual acc. | tokens / problem | persist / refine / concede |")
    print("|---|---:|---:|---:|---|")
    for name, r in rows.items():
        shares = " / ".join(f"{r[f'{a}_share']:.0%}" for a in ACTION_NAMES)
        print(
            f"| {name} | {r['consensus_accuracy']:.3f} | {r['accuracy']:.3f} "
            f"| {r['tokens_per_problem']:,.0f} | {shares} |"
        )
    print(f"| best joint action per problem (hindsight ceiling) | {ceiling:.3f} | | | |")
    print("\nConsensus accuracy minus the baseline's, paired by problem (mean +- 95% CI):\n")
    print("| policy | " + " | ".join(f"- {b}" for b in COMPARED_WITH) + " |")
    print("|---|" + "---:|" * len(COMPARED_WITH))
    for name, diffs in differences.items():
        print(f"| {name} | " + " | ".join(f"{m:+.3f} +- {h:.3f}" for m, h in diffs.values()) + " |")
    print("\nWhat the observations say (round 0; AUC for the agent's own correctness):\n")
    print("| episodes | own acc. | AUC confidence | AUC peer agreement | REFINE fixes / breaks |")
    print("|---|---:|---:|---:|---:|")
    for name, sig in signal.items():
        print(
            f"| {name} | {sig['own_accuracy']:.3f} | {sig['auc_confidence']:.2f} | "
            f"{sig['auc_peer_agree_share']:.2f} | {sig['refine_fixes']} / {sig['refine_breaks']} "
            f"of {sig['answers']} |"
        )
    return result


def main(args: Args) -> None:
    record = {"warm": warm, "train": run_training, "report": report}[args.what](args)
    write_results(f"smollm2_learning-{args.what}", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
