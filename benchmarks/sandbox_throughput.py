"""Sandbox throughput: HumanEval checks per second with the sandbox pool.

Runs the hidden tests of all 164 canonical HumanEval solutions (each a fresh sandboxed
process: see :mod:`deliberation_env.sandbox`) with ``run_many`` at several pool sizes,
and the start-up cost of one trivial sandboxed program, then prints a Markdown table.

    python benchmarks/sandbox_throughput.py [--workers 1 2 4 8] [--repeats 3]
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass

import tyro

from deliberation_env.sandbox import run_many, run_python
from deliberation_env.tasks.humaneval import HumanEvalTask


@dataclass
class Args:
    workers: tuple[int, ...] = (1, 2, 4, 8)
    """Pool sizes (concurrent sandboxed processes) to measure."""
    repeats: int = 3
    """Runs of the 164 checks per pool size; the median is reported."""
    timeout_s: float = 10.0
    """Wall-clock limit of each check."""


def main(args: Args) -> None:
    task = HumanEvalTask(timeout_s=args.timeout_s)
    problems = task.problems("train") + task.problems("test")
    programs = [task.program(p, p.answer) for p in problems]
    isolation = run_python("pass").isolation
    startup = statistics.median(run_python("pass").duration for _ in range(20))

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; isolation: {isolation}"
    )
    print(f"one trivial program (`pass`), median of 20: {startup * 1000:.0f} ms\n")
    print("| workers | checks/s (median) | seconds for 164 | passed |")
    print("|--------:|------------------:|----------------:|-------:|")
    for workers in args.workers:
        seconds, passed = [], 0
        for _ in range(args.repeats):
            start = time.perf_counter()
            results = run_many(programs, args.timeout_s, max_workers=workers)
            seconds.append(time.perf_counter() - start)
            passed = sum(r.passed for r in results)
        median = statistics.median(seconds)
        print(
            f"| {workers} | {len(programs) / median:.1f} | {median:.2f} | {passed}/{len(programs)} |"
        )


if __name__ == "__main__":
    main(tyro.cli(Args))
