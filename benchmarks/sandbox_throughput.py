"""Sandbox throughput: HumanEval verdicts per second with the sandbox pool.

Judges all 164 canonical HumanEval solutions on the verdict path (each check one fresh
sandbox: a candidate process answering a trusted judge process, see
:mod:`deliberation_env.sandbox`) with ``judge_many`` at several pool sizes, and the
start-up cost of one trivial check, then prints a Markdown table and writes
``benchmarks/results/sandbox_throughput.json``.

    python benchmarks/sandbox_throughput.py [--workers 1 2 4 8] [--repeats 3]
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
import time
from dataclasses import dataclass

import tyro
from results import write_results

from deliberation_env.sandbox import JudgeRequest, judge_many, judge_python
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
    requests = [task.request(p, p.answer) for p in problems]
    trivial = JudgeRequest("def f():\n    pass\n", "def check(f):\n    f()\n", "f")
    isolation = judge_python(trivial).isolation
    startup = statistics.median(judge_python(trivial).duration for _ in range(20))

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; isolation: {isolation}"
    )
    print(f"one trivial check (one call of `pass`), median of 20: {startup * 1000:.0f} ms\n")
    print("| workers | checks/s (median) | seconds for 164 | passed |")
    print("|--------:|------------------:|----------------:|-------:|")
    rows = []
    for workers in args.workers:
        seconds, passed = [], 0
        for _ in range(args.repeats):
            start = time.perf_counter()
            verdicts = judge_many(requests, args.timeout_s, max_workers=workers)
            seconds.append(time.perf_counter() - start)
            passed = sum(v.passed for v in verdicts)
        median = statistics.median(seconds)
        rows.append({"workers": workers, "checks_per_s": len(requests) / median, "seconds": median, "passed": passed})
        print(
            f"| {workers} | {len(requests) / median:.1f} | {median:.2f} | {passed}/{len(requests)} |"
        )
    record = {
        "args": dataclasses.asdict(args),
        "isolation": isolation,
        "trivial_check_ms": startup * 1000,
        "checks": len(requests),
        "pools": rows,
    }
    write_results("sandbox_throughput", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
