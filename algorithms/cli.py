"""The ``deliberate`` command line.

- ``deliberate run``: evaluate the heuristic baselines with an LLM team on a task; print a
  table, write ``runs/<name>/results.json`` and plots (the README's main job).
- ``deliberate train --algo softrankpo ...``: train one learner (:mod:`algorithms.harness`).
- ``deliberate compare --algos softrankpo grpo magrpo --seeds 5 ...``: optimizers on the same
  env, problems and budget, with learning curves, final accuracies and ablations.
- ``deliberate tasks list`` / ``deliberate tasks show NAME [--path ...]``.
- ``deliberate cache stats`` / ``deliberate cache clear``.

The CLI sits at the top of the dependency order (algorithms -> deliberation_env -> agents)
because ``run`` evaluates baselines, which live in ``algorithms``.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Union

import tyro
from rich.console import Console
from rich.table import Table

import deliberation_env as de
from agents import SMOLLM2_TEMPERATURE, CachedBackend, make_backend, smollm2_agent
from agents.base import Backend, Solver
from agents.cache import DEFAULT_CACHE_PATH
from algorithms import baselines, harness, plots, text_eval
from algorithms.evaluate import EvalResult, evaluate
from deliberation_env.tasks.arithmetic import DEFAULT_DIFFICULTY
from deliberation_env.text import CodingProtocol

console = Console(width=shutil.get_terminal_size((120, 40)).columns)

def task_kwargs(task: str, difficulty: int, path: str | None) -> dict[str, Any]:
    """Keyword arguments for a task given by name on the command line."""
    if task == "arithmetic":
        return {"difficulty": difficulty}
    return {"path": path} if path else {}


def build_team(team: str, offline: bool, cache: Path | None) -> Solver:
    """The team preset ``team``; ``smollm2`` goes through the SQLite response cache."""
    if team == "simulated":
        return make_backend("simulated")
    if team == "smollm2":
        return smollm2_agent(cache=cache, offline=offline)
    raise ValueError(f"unknown team {team!r}; use 'smollm2' or 'simulated'")


# ---------------------------------------------------------------------------- run
@dataclass
class Run:
    """Evaluate the heuristic baselines with a team on a task: table, results.json, plots."""

    name: str | None = None
    """Run name; results go to ``<out_dir>/<name>/`` (default: ``<team>-<task>``)."""
    task: str = "arithmetic"
    """Task name (``deliberate tasks list``)."""
    difficulty: int = DEFAULT_DIFFICULTY
    """Arithmetic difficulty, 1 (single-digit sums) to 5 (word problems)."""
    path: str | None = None
    """Data path for file-based tasks (gsm8k, math, mmlu, ...)."""
    team: str = "smollm2"
    """``smollm2`` (SmolLM2-135M-Instruct via llama.cpp, cached) or ``simulated`` (no LLM)."""
    n_agents: int = 3
    """Agents in the team."""
    max_rounds: int = 2
    """Deliberation rounds after the initial answers."""
    n_problems: int = 24
    """Held-out problems to evaluate on (the first n of the split)."""
    split: str = "test"
    """Problem split."""
    policies: tuple[str, ...] = ("independent", "debate", "minority-concedes", "confidence-threshold")
    """Baselines to evaluate (``algorithms.baselines``)."""
    num_envs: int = 8
    """Episodes stepped together (one backend call per phase for all of them)."""
    seed: int = 0
    """Evaluation seed (episode seeds derive from it and the problem)."""
    out_dir: Path = Path("runs")
    """Where run folders go."""
    cache: Path | None = None
    """SQLite response cache (default: ``~/.cache/deliberation_env/``)."""
    offline: bool = False
    """Serve every LLM call from the cache; a miss is an error (exact replay)."""
    env: str = "meta"
    """``meta`` (the meta-action env) or ``text`` (the text-action env: the MAGRPO paper's
    coding baselines with a frozen SmolLM2 team; task ``humaneval``; see ``run_text``)."""
    samples: int = 1
    """``--env text``: samples per problem (pass@k and accuracy@k for every k <= samples)."""


def run(cfg: Run) -> dict[str, Any]:
    """The main job (see :class:`Run`)."""
    if cfg.env == "text":
        return run_text(cfg)
    if cfg.env != "meta":
        raise ValueError(f"--env must be 'meta' or 'text', got {cfg.env!r}")
    started = time.perf_counter()
    team = build_team(cfg.team, cfg.offline, cfg.cache)
    venv = de.vector_env(
        cfg.num_envs, task=cfg.task, team=team, n_agents=cfg.n_agents, max_rounds=cfg.max_rounds,
        split=cfg.split, task_kwargs=task_kwargs(cfg.task, cfg.difficulty, cfg.path),
    )
    n_problems = min(cfg.n_problems, len(venv.problems))
    policies = [baselines.get(name) for name in cfg.policies]
    kind = "SIMULATED team, no LLM" if team.model_id.startswith("simulated") else "LLM team"
    console.print(f"[bold]{cfg.n_agents} x {team.model_id}[/bold] ({kind}) on {cfg.task} ({cfg.split}, "
                  f"{n_problems} problems, {cfg.max_rounds} rounds)")
    results = [evaluate(policy, venv, range(n_problems), seed=cfg.seed) for policy in policies]
    elapsed = time.perf_counter() - started

    name = cfg.name or f"{cfg.team}-{cfg.task}"
    folder = cfg.out_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{cfg.n_agents} x {team.model_id} on {cfg.task}"
    figures = [
        plots.accuracy_per_round(results, folder / "accuracy_per_round.png", title),
        plots.reliability_diagram(results, folder / "reliability.png", f"Introspective confidence\n{team.model_id}"),
    ]
    record = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
        "model_id": team.model_id,
        "team_kind": kind,
        "env": "deliberation-v0",
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}",
        "elapsed_s": round(elapsed, 1),
        "results": [r.summary() for r in results],
        "figures": [str(f) for f in figures],
    }
    (folder / "results.json").write_text(json.dumps(record, indent=2))
    console.print(results_table(results, title))
    console.print(f"wrote {folder / 'results.json'} and {', '.join(str(f) for f in figures)} ({elapsed:.0f} s)")
    return record


def run_text(cfg: Run, backend: Backend | None = None) -> dict[str, Any]:
    """``deliberate run --env text --task humaneval``: the coding baselines of
    :mod:`algorithms.text_eval` with a frozen team (SmolLM2 through the response cache, or
    ``backend``): table, ``results.json`` and ``reward_parts.png``. ``--n-problems`` counts
    HumanEval problems; about 8 take 10 minutes on 2 CPU cores the first time."""
    if cfg.task != "humaneval":
        raise ValueError(f"--env text evaluates the coding baselines on task 'humaneval', got --task {cfg.task!r}")
    started = time.perf_counter()
    if backend is None:
        backend = CachedBackend(make_backend("llamacpp"), path=cfg.cache or DEFAULT_CACHE_PATH, offline=cfg.offline)
    protocol = CodingProtocol(de.tasks.get("humaneval", **task_kwargs(cfg.task, cfg.difficulty, cfg.path)))
    console.print(f"[bold]helper + main, 2 x {backend.model_id}[/bold] on humaneval ({cfg.split}, "
                  f"{cfg.n_problems} problems, {cfg.samples} sample(s) each)")
    summaries = text_eval.evaluate_baselines(
        protocol, backend, cfg.n_problems, samples=cfg.samples, seed=cfg.seed, split=cfg.split,
        temperature=SMOLLM2_TEMPERATURE,
    )
    elapsed = time.perf_counter() - started
    folder = cfg.out_dir / (cfg.name or f"{cfg.team}-text-humaneval")
    folder.mkdir(parents=True, exist_ok=True)
    title = f"helper + main, 2 x {backend.model_id} on humaneval"
    figure = text_eval.plot_reward_parts(summaries, folder / "reward_parts.png", title)
    record = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
        "model_id": backend.model_id,
        "env": "text-deliberation-v0",
        "protocol": "coding",
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}",
        "elapsed_s": round(elapsed, 1),
        "results": summaries,
        "figures": [str(figure)],
    }
    (folder / "results.json").write_text(json.dumps(record, indent=2))
    console.print(text_eval.results_table(summaries, title))
    console.print(f"wrote {folder / 'results.json'} and {figure} ({elapsed:.0f} s)")
    return record


def results_table(results: list[EvalResult], title: str) -> Table:
    """A rich table of evaluation results."""
    table = Table(title=title)
    for column in ("policy", "acc@0", "acc@end", "cons@0", "cons@end", "tokens/problem", "persist", "refine", "concede"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for r in results:
        shares = r.action_shares
        table.add_row(
            r.policy, f"{r.accuracy[0]:.3f}", f"{r.accuracy[-1]:.3f}", f"{r.consensus_accuracy[0]:.3f}",
            f"{r.consensus_accuracy[-1]:.3f}", f"{r.tokens_per_problem:,.0f}",
            f"{shares['persist']:.2f}", f"{shares['refine']:.2f}", f"{shares['concede']:.2f}",
        )
    table.caption = "acc: mean individual accuracy; cons: plurality consensus accuracy; @0: initial answers"
    return table


# ---------------------------------------------------------------------------- tasks
@dataclass
class TasksList:
    """List the built-in tasks."""


@dataclass
class TasksShow:
    """Describe a task and print a sample problem."""

    name: tyro.conf.Positional[str]
    """Task name."""
    path: str | None = None
    """Data path, for file-based tasks."""
    split: str = "test"
    """Split to sample from."""
    index: int = 0
    """Which problem to print."""


@dataclass
class Tasks:
    """Inspect the built-in tasks."""

    command: tyro.conf.OmitArgPrefixes[
        Annotated[TasksList, tyro.conf.subcommand("list", prefix_name=False)] | Annotated[TasksShow, tyro.conf.subcommand("show", prefix_name=False)]
    ]


def tasks(cfg: Tasks) -> None:
    """``deliberate tasks list|show``."""
    if isinstance(cfg.command, TasksList):
        table = Table(title="tasks")
        table.add_column("name")
        table.add_column("what")
        for name in de.tasks.names():
            doc = (de.tasks.task_class(name).__doc__ or "").strip().splitlines()
            table.add_row(name, doc[0] if doc else "")
        console.print(table)
        return
    show = cfg.command
    task = de.tasks.get(show.name, **task_kwargs(show.name, DEFAULT_DIFFICULTY, show.path))
    problems = task.problems(show.split)
    problem = problems[show.index]
    console.print(f"[bold]{show.name}[/bold]: {(type(task).__doc__ or '').strip().splitlines()[0]}")
    console.print(f"{len(problems)} problems in split {show.split!r}")
    console.print(f"answer format: {task.instructions}")
    console.print(f"\n[bold]{problem.id}[/bold]\n{problem.question}\n\nreference decision: {problem.answer!r}")


# ---------------------------------------------------------------------------- cache
@dataclass
class CacheStats:
    """Show what the response cache holds."""

    path: Path | None = None
    """Cache file (default: ``~/.cache/deliberation_env/``)."""


@dataclass
class CacheClear:
    """Delete every cached response."""

    path: Path | None = None
    """Cache file (default: ``~/.cache/deliberation_env/``)."""


@dataclass
class Cache:
    """Inspect or clear the SQLite response cache."""

    command: tyro.conf.OmitArgPrefixes[
        Annotated[CacheStats, tyro.conf.subcommand("stats", prefix_name=False)] | Annotated[CacheClear, tyro.conf.subcommand("clear", prefix_name=False)]
    ]


def cache(cfg: Cache) -> None:
    """``deliberate cache stats|clear``."""
    from agents.cache import DEFAULT_CACHE_PATH, cache_clear, cache_stats

    path = cfg.command.path or DEFAULT_CACHE_PATH
    if isinstance(cfg.command, CacheStats):
        console.print_json(json.dumps(cache_stats(path), default=str))
    else:
        cache_clear(path)
        console.print(f"cleared {path}")


# ---------------------------------------------------------------------------- main
Command = Union[  # noqa: UP007 (tyro subcommands read clearest as a Union)
    Annotated[Run, tyro.conf.subcommand("run")],
    Annotated[harness.TrainConfig, tyro.conf.subcommand("train")],
    Annotated[harness.CompareConfig, tyro.conf.subcommand("compare")],
    Annotated[Tasks, tyro.conf.subcommand("tasks")],
    Annotated[Cache, tyro.conf.subcommand("cache")],
]

_HANDLERS = {
    Run: run,
    harness.TrainConfig: harness.train,
    harness.CompareConfig: harness.compare,
    Tasks: tasks,
    Cache: cache,
}


LIST_FLAGS = ("--algos", "--reward-scales", "--baselines")
"""Flags whose values may also be written as comma lists (``--algos softrankpo,grpo``)."""


def split_comma_lists(argv: list[str]) -> list[str]:
    """Expand comma lists after :data:`LIST_FLAGS` into the space-separated values tyro reads.

    >>> split_comma_lists(["compare", "--algos", "softrankpo,grpo", "--reward-scales=0.1,1"])
    ['compare', '--algos', 'softrankpo', 'grpo', '--reward-scales', '0.1', '1']
    """
    out: list[str] = []
    in_list = False
    for arg in argv:
        flag, equals, value = arg.partition("=")
        if arg.startswith("-"):
            in_list = flag.replace("_", "-") in LIST_FLAGS
            if not (in_list and equals):
                out.append(arg)
                continue
            out.append(flag)
            arg = value
        if in_list:
            out.extend(part for part in arg.split(",") if part)
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deliberate`` console script."""
    args = split_comma_lists(sys.argv[1:] if argv is None else argv)
    cfg = tyro.cli(Command, args=args, prog="deliberate")
    _HANDLERS[type(cfg)](cfg)


if __name__ == "__main__":
    main()
