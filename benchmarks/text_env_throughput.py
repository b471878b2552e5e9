"""Text env throughput: steps per second with precomputed completions, against the sandbox.

The env's own cost, with no model: completions are written beforehand and every step
scores them with the protocol, including each agent's leave-one-out score.

- math: ``text_vector_env`` on arithmetic, every agent answering; steps of all envs.
- coding: HumanEval's canonical solution split into a helper (``aux`` holding the
  canonical body) and a main function calling it after a case of its own (``if x is
  None``), so every step runs the trusted verdict: the team's program, the program
  without the helper (the main agent's neutral text has no function, so it is not
  judged) and, as the team passes every test, the program with the helper's answers
  swapped (red teams 27 and 28: do they matter?) and the helper alone as the entry point
  (red team 42: does the main's own work matter? Here it does not, so such a team scores
  3.0, and 4.0 where the swapped answers pass too). Every program is judged once.
  Measured two ways on the same problems: a ``text_vector_env`` of ``num_envs`` envs,
  whose step sends every env's programs to the sandbox in one ``judge_many`` call, and a
  single ``text_env`` stepped one problem at a time (what every step cost before the
  batch). Each path has its own protocol, so no verdict comes from another's cache.
- sandbox: ``judge_many`` on the same team programs, one worker, and with 4 workers: the
  checks per second that bound the coding env.

Writes ``benchmarks/results/text_env_throughput.json``.

    python benchmarks/text_env_throughput.py [--math-steps 2000] [--coding-problems 40]
"""

from __future__ import annotations

import dataclasses
import platform
import time
from dataclasses import dataclass

import tyro
from results import write_results

from deliberation_env import tasks
from deliberation_env.sandbox import judge_many
from deliberation_env.text import CodingProtocol, text_env, text_vector_env


@dataclass
class Args:
    math_steps: int = 2000
    """Env steps of the math protocol (in vector envs of ``num_envs``)."""
    num_envs: int = 8
    """Envs of the math and coding vector envs."""
    coding_problems: int = 40
    """HumanEval problems (one coding step each, per path)."""


def split_solution(problem) -> tuple[str, str]:
    """The canonical solution as a helper ``aux`` with the canonical body, and a main
    function that calls it with the same arguments after a case of its own (module
    docstring)."""
    prompt, entry = problem.meta["prompt"], problem.meta["entry_point"]
    body = problem.answer[len(prompt) :]
    signature = prompt[prompt.rindex(f"def {entry}(") :].split(":\n", 1)[0]
    arguments = signature[signature.index("(") + 1 : signature.rindex(")")]
    names = [a.split(":")[0].split("=")[0].strip() for a in arguments.split(",") if a.strip()]
    helper = signature.replace(f"def {entry}(", "def aux(", 1) + ":\n" + body
    case = f"    if {names[0]} is None:\n        return None\n"
    main = f"def {entry}({', '.join(names)}):\n{case}    results = [aux({', '.join(names)})]\n    return results[0]\n"
    return helper, main


def math_steps_per_s(args: Args) -> float:
    venv = text_vector_env(args.num_envs, task="arithmetic", n_agents=3, max_turns=1)
    answers = {agent: ["The answer is 7."] * args.num_envs for agent in venv.possible_agents}
    venv.reset(seed=0)
    steps = 0
    started = time.perf_counter()
    while steps < args.math_steps:
        venv.reset()
        venv.step(answers)
        steps += args.num_envs
    return steps / (time.perf_counter() - started)


def coding_steps_per_s(args: Args) -> tuple[float, float, float, list]:
    """Env steps per second of the coding protocol, batched (vector env) and one env at a
    time; the share of steps that earned the cooperation bonus (3.0 or more); the (problem,
    team program) pairs."""
    venv = text_vector_env(args.num_envs, task="humaneval", split="test")
    problems = list(venv.problems)[: args.coding_problems]
    texts = [split_solution(p) for p in problems]
    rewards = []
    started = time.perf_counter()
    for first in range(0, len(problems), args.num_envs):
        indices = [min(k, len(problems) - 1) for k in range(first, first + args.num_envs)]
        venv.reset(options={"problem_index": indices})
        _, reward, _, _, _ = venv.step({f"agent_{i}": [texts[k][i] for k in indices] for i in range(2)})
        rewards.extend(reward["agent_0"][: len(problems) - first].tolist())
    batched = len(problems) / (time.perf_counter() - started)

    env = text_env(task="humaneval", split="test")
    started = time.perf_counter()
    for index, (helper, main) in enumerate(texts):
        env.reset(options={"problem_index": index})
        env.step({"agent_0": helper, "agent_1": main})
    one_by_one = len(texts) / (time.perf_counter() - started)
    programs = [env.protocol.codes(p, t)[2] for p, t in zip(problems, texts, strict=True)]
    full = sum(r >= 3.0 for r in rewards) / len(rewards)
    return batched, one_by_one, full, list(zip(problems, programs, strict=True))


def sandbox_checks_per_s(task, pairs: list, workers: int) -> float:
    """Checks per second of ``judge_many`` on the team programs (a fresh protocol: no cache)."""
    protocol = CodingProtocol(task)
    requests = [protocol.request(p, program) for p, program in pairs]
    started = time.perf_counter()
    judge_many(requests, max_workers=workers, hidden_paths=task.hidden_paths)
    return len(requests) / (time.perf_counter() - started)


def main(args: Args) -> None:
    math_rate = math_steps_per_s(args)
    batched, one_by_one, full, pairs = coding_steps_per_s(args)
    task = tasks.get("humaneval")
    one, four = (sandbox_checks_per_s(task, pairs, w) for w in (1, 4))
    print(f"machine: {platform.machine()}, python {platform.python_version()}")
    print("| what | per second |")
    print("|---|---:|")
    print(f"| math protocol, 3 agents: env steps (vector env of {args.num_envs}) | {math_rate:,.0f} |")
    print(f"| coding protocol: env steps, vector env of {args.num_envs}, one judge_many call per step "
          f"({args.coding_problems} problems; {full:.0%} earned cooperation) | {batched:.1f} |")
    print(f"| coding protocol: env steps, one env at a time | {one_by_one:.1f} |")
    print(f"| sandbox: checks, 1 worker | {one:.1f} |")
    print(f"| sandbox: checks, 4 workers | {four:.1f} |")
    record = {
        "args": dataclasses.asdict(args),
        "math_steps_per_s": math_rate,
        "coding_steps_per_s_vector": batched,
        "coding_steps_per_s_one_env": one_by_one,
        "coding_cooperation_share": full,
        "sandbox_checks_per_s_1_worker": one,
        "sandbox_checks_per_s_4_workers": four,
    }
    write_results("text_env_throughput", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
