"""Sandbox throughput: HumanEval verdicts per second, and what the helper's process costs.

Judges all 164 canonical HumanEval solutions on the verdict path (each check one fresh
sandbox: a candidate process answering a trusted judge process, see
:mod:`deliberation_env.sandbox`) with ``judge_many`` at several pool sizes, and the
start-up cost of one trivial check. Then the coding protocol's two-agent case: the same
164 solutions as the *helper* (renamed ``aux``) behind a main function that forwards its
arguments, and one HumanEval-style check whose main function calls its helper in a loop of
``--helper-calls`` (the cost of one helper call is the difference to a check with one
call, divided by the calls). Prints Markdown tables and writes
``benchmarks/results/sandbox_throughput.json``.

``--one-process`` judges the helper's code inside the candidate's program, as the coding
protocol did before the process boundary (and the only way a tree without it can run);
its results go to ``sandbox_throughput-one-process.json``.

    python benchmarks/sandbox_throughput.py [--workers 1 2 4 8] [--repeats 3] [--one-process]
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import tyro
from results import write_results

from deliberation_env.sandbox import JudgeRequest, judge_many, judge_python
from deliberation_env.tasks import Problem
from deliberation_env.tasks.humaneval import HumanEvalTask

HELPER_LOOP = "def aux(total, n):\n    return total + n\n"
MAIN_LOOP = "def f(calls):\n    total = 0\n    for n in range(calls):\n        total = aux(total, n)\n    return total\n"


@dataclass
class Args:
    workers: tuple[int, ...] = (1, 2, 4, 8)
    """Pool sizes (concurrent sandboxed processes) to measure."""
    repeats: int = 3
    """Runs of the 164 checks per pool size; the median is reported."""
    timeout_s: float = 10.0
    """Wall-clock limit of each check."""
    helper_calls: int = 10_000
    """Helper calls of the looping check."""
    one_process: bool = False
    """Judge the helper's code in the candidate's program (no helper process)."""


def two_agent_request(
    main: str, helper: str, tests: str, entry: str, one_process: bool, setup: str = ""
) -> JudgeRequest:
    """The check of a main program calling ``aux``: in one program, or with the helper's
    code in its own process."""
    if one_process:
        return JudgeRequest(f"{helper}\n\n{main}", tests, entry, setup)
    return JudgeRequest(main, tests, entry, setup, helper=helper, helper_functions=("aux",))


def split_requests(problems: Sequence[Problem], one_process: bool) -> list[JudgeRequest]:
    """Each canonical solution renamed ``aux`` as the helper, behind a forwarding main."""
    requests = []
    for problem in problems:
        entry, prompt = problem.meta["entry_point"], problem.meta["prompt"]
        helper = re.sub(rf"\b{entry}\b", "aux", problem.answer)
        main = f"{prompt}\n\ndef {entry}(*args):\n    return aux(*args)\n"
        tests = problem.meta["test"]
        requests.append(two_agent_request(main, helper, tests, entry, one_process, problem.answer))  # the judge's setup: the reference
    return requests


def pool_rows(requests: list[JudgeRequest], args: Args) -> list[dict]:
    """Checks per second of ``requests`` at each pool size (median of the repeats)."""
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
        rows.append(
            {
                "workers": workers,
                "checks_per_s": len(requests) / median,
                "seconds": median,
                "passed": passed,
            }
        )
        print(
            f"| {workers} | {len(requests) / median:.1f} | {median:.2f} | {passed}/{len(requests)} |"
        )
    return rows


def helper_loop(args: Args) -> dict:
    """One check calling the helper once and ``args.helper_calls`` times (medians of 5)."""

    def seconds(calls: int) -> float:
        tests = f"def check(f):\n    assert f({calls}) == {calls * (calls - 1) // 2}\n"
        request = two_agent_request(MAIN_LOOP, HELPER_LOOP, tests, "f", args.one_process)
        verdicts = [judge_python(request, args.timeout_s) for _ in range(5)]
        assert all(v.passed for v in verdicts), verdicts[0].detail
        return statistics.median(v.duration for v in verdicts)

    one, many = seconds(1), seconds(args.helper_calls)
    per_call_us = (many - one) / (args.helper_calls - 1) * 1e6
    print(
        f"\none check with 1 helper call: {one * 1000:.0f} ms; with {args.helper_calls:,}: {many * 1000:.0f} ms"
    )
    print(
        f"per helper call: {per_call_us:.1f} us (the task's limit: {args.timeout_s:g} s per check)"
    )
    return {"one_call_ms": one * 1000, "many_calls_ms": many * 1000, "per_call_us": per_call_us}


def main(args: Args) -> None:
    task = HumanEvalTask(timeout_s=args.timeout_s)
    problems = task.problems("train") + task.problems("test")
    requests = [task.request(p, p.answer) for p in problems]
    trivial = JudgeRequest("def f():\n    pass\n", "def check(f):\n    f()\n", "f")
    isolation = judge_python(trivial).isolation
    startup = statistics.median(judge_python(trivial).duration for _ in range(20))

    mode = "one process" if args.one_process else "helper process"
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; isolation: {isolation}"
    )
    print(f"one trivial check (one call of `pass`), median of 20: {startup * 1000:.0f} ms\n")
    print("The canonical solutions:\n")
    rows = pool_rows(requests, args)
    print(f"\nThe canonical solutions as the helper behind a forwarding main ({mode}):\n")
    split_rows = pool_rows(split_requests(problems, args.one_process), args)
    loop = helper_loop(args)
    record = {
        "args": dataclasses.asdict(args),
        "isolation": isolation,
        "trivial_check_ms": startup * 1000,
        "checks": len(requests),
        "pools": rows,
        "helper_split_pools": split_rows,
        "helper_loop": loop,
    }
    write_results(
        "sandbox_throughput-one-process" if args.one_process else "sandbox_throughput", record
    )


if __name__ == "__main__":
    main(tyro.cli(Args))
