"""The ``deliberate`` command line.

- ``deliberate run``: evaluate the heuristic baselines with an LLM team on a task; print a
  table, write ``runs/<name>/results.json`` and plots (the README's main job).
- ``deliberate train --algo softrankpo ...``: train one learner (:mod:`algorithms.harness`).
- ``deliberate compare --algos softrankpo grpo magrpo --seeds 5 ...``: optimizers on the same
  env, problems and budget, with learning curves, final accuracies and ablations.
- ``deliberate train --env text --algo magrpo ...``: train the LLMs themselves on the text-action
  env (:func:`algorithms.text.train`; the learner's config fields are the options).
- ``deliberate compare --env text --algos magrpo,grpo,softrankpo --seeds 2 ...``: the LLM-weight
  learners x seeds on the same settings: a table and ``compare.json``.
- ``deliberate train|compare --workers N ...``: the env's episodes on N Ray workers (the ``ray``
  extra; short for ``--env.workers N`` / ``--train.env.workers N``, :mod:`deliberation_env.distributed`).
- ``deliberate run|train|compare --config FILE``: start from a YAML/JSON config file
  (:mod:`algorithms.core.config_files`; the paper experiments are in ``examples/configs/``); a
  ``train``/``compare`` file with ``env: text`` is for ``--env text``.
- ``deliberate tasks list`` / ``deliberate tasks show NAME [--path ...]``.
- ``deliberate cache stats`` / ``deliberate cache clear`` / ``deliberate cache merge OUT IN [IN ...]``.

The CLI sits at the top of the dependency order (algorithms -> deliberation_env -> agents)
because ``run`` evaluates baselines, which live in ``algorithms``.
"""

from __future__ import annotations

import json
import logging
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Union

import tyro
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

import deliberation_env as de
from agents import SMOLLM2_TEMPERATURE
from agents.base import Backend, Solver
from agents.specs import backend_from_spec
from algorithms import text as text_learners
from algorithms.core import config_files
from algorithms.core.compare import run_grid, summarize_runs, summary_table
from algorithms.meta import baselines, plots
from algorithms.meta import compare as harness
from algorithms.meta.compute_matched import compute_matched
from algorithms.meta.evaluate import EvalResult, evaluate
from algorithms.text import eval as text_eval
from deliberation_env.arguments import build_task
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.spaces import ACTION_NAMES
from deliberation_env.meta.team import build_team
from deliberation_env.tasks import problem_count
from deliberation_env.text import CodingProtocol

# a terminal's own width; logs, pipes and CI get 140 columns, so the tables keep every column whole
console = Console(width=shutil.get_terminal_size().columns if sys.stdout.isatty() else 140)
# what the tasks announce about the data (how a single file was split: counts per split)
data_log = RichHandler(console=console, show_time=False, show_level=False, show_path=False, markup=False)

# ---------------------------------------------------------------------------- run
DEFAULT_PROBLEMS = {"meta": 24, "text": 8}
"""``--n-problems`` by ``--env``: 24 arithmetic problems take the meta env's SmolLM2 team
about 8 minutes on 2 CPU cores, 8 HumanEval problems the text env's about 10."""


@dataclass
class Run:
    """Evaluate the heuristic baselines with a team on a task: table, results.json, plots.
    ``--config FILE`` starts from a config file (``examples/configs/``)."""

    env_args: tyro.conf.OmitArgPrefixes[EnvConfig] = field(
        default_factory=lambda: EnvConfig(team="smollm2", split="test", max_rounds=2)
    )
    """The env (:class:`deliberation_env.meta.config.EnvConfig`): ``--task``, ``--path``,
    ``--team``, ``--n-agents``, ``--max-rounds``, ``--temperature``, ... (no prefix)."""
    name: str | None = None
    """Run name; results go to ``<out_dir>/<name>/`` (default: ``<team>-<task>``)."""
    n_problems: int | None = None
    """Held-out problems to evaluate on (the first n of the split); None: 24 for ``--env
    meta``, 8 for ``--env text``."""
    policies: tuple[str, ...] = ("independent", "debate", "minority-concedes", "confidence-threshold")
    """Baselines to evaluate (``algorithms.meta.baselines``)."""
    num_envs: int | None = None
    """Episodes stepped together (one backend call per phase for all of them); None: every
    problem at once, the largest batch (a batching backend such as ``ctranslate2`` decodes
    it together; the episodes are the same for any value: seeds follow the problem)."""
    seed: int = 0
    """Evaluation seed (episode seeds derive from it and the problem)."""
    out_dir: Path = Path("runs")
    """Where run folders go."""
    env: str = "meta"
    """``meta`` (the meta-action env) or ``text`` (the text-action env: the MAGRPO paper's
    coding baselines with a frozen team of one backend; task ``humaneval``; see ``run_text``)."""
    samples: int = 1
    """``--env text``: samples per problem (pass@k and accuracy@k for every k <= samples)."""

    def __post_init__(self) -> None:
        if self.env not in DEFAULT_PROBLEMS:
            raise ValueError(f"--env must be 'meta' or 'text', got {self.env!r}")
        if self.n_problems is None:
            self.n_problems = DEFAULT_PROBLEMS[self.env]
        if self.n_problems < 1:
            raise ValueError(f"--n-problems must be >= 1, got {self.n_problems}")
        if self.num_envs is not None and self.num_envs < 1:
            raise ValueError(f"--num-envs must be >= 1 (or omitted: every problem at once), got {self.num_envs}")
        if self.env_args.workers:
            raise ValueError("run evaluates in this process: --workers is for train and compare")

    def run_name(self) -> str:
        """The run folder's name: ``name``, else ``<team>-<task>`` (``<team>-text-<task>``)."""
        team = "+".join(self.env_args.team) if isinstance(self.env_args.team, tuple) else str(self.env_args.team)
        team = team.rsplit("/", 1)[-1].replace(":", "-").replace("#", "-")
        kind = "-text" if self.env == "text" else ""
        return self.name or f"{team}{kind}-{self.env_args.task}"


def run(cfg: Run) -> dict[str, Any]:
    """The main job (see :class:`Run`)."""
    if cfg.env == "text":
        return run_text(cfg)
    started = time.perf_counter()
    args = cfg.env_args
    team = build_team(args)
    # The built members hold the sampling settings of their specs already.
    task = build_task(args)  # loaded once: it sizes the vector env and is handed to it
    n_problems = problem_count(cfg.n_problems, len(task.problems(args.split)), args.split, "--n-problems")
    num_envs = cfg.num_envs or n_problems
    venv = de.vector_env_from(
        args, num_envs, team=team, task=task, path=None, difficulty=None, task_kwargs=None, temperature=None, max_tokens=None,
        top_k=None,
    )
    policies = [baselines.get(name) for name in cfg.policies]
    model_id = team_title(team)
    model_ids = sorted({solver.model_id for solver in team})
    kind = "SIMULATED team, no LLM" if all(s.model_id.startswith("simulated") for s in team) else "LLM team"
    console.print(f"[bold]{model_id}[/bold] ({kind}) on {args.task} ({args.split}, "
                  f"{n_problems} problems, {args.max_rounds} rounds)")
    results = [evaluate(policy, venv, range(n_problems), seed=cfg.seed) for policy in policies]
    matched = compute_matched(team[0], args, results, range(n_problems), cfg.seed, num_envs)
    elapsed = time.perf_counter() - started

    folder = cfg.out_dir / cfg.run_name()
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{model_id} on {args.task}"
    figures = [
        plots.accuracy_per_round(results, folder / "accuracy_per_round.png", title),
        plots.reliability_diagram(results, folder / "reliability.png", f"Introspective confidence\n{model_id}"),
    ]
    record = {
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "model_id": model_ids[0] if len(model_ids) == 1 else [solver.model_id for solver in team],
        "team_kind": kind,
        "env": "deliberation-v0",
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}",
        "elapsed_s": round(elapsed, 1),
        "results": [r.summary() for r in results],
        "compute_matched": [r.summary() for r in matched],
        "figures": [str(f) for f in figures],
    }
    (folder / "results.json").write_text(json.dumps(record, indent=2))
    console.print(results_table([*results, *matched], title))
    console.print(f"wrote {folder / 'results.json'} and {', '.join(str(f) for f in figures)} ({elapsed:.0f} s)")
    return record


def team_title(team: list[Solver]) -> str:
    """``3 x <model id>`` for a homogeneous team, else the model ids joined by ``+``."""
    ids = [solver.model_id for solver in team]
    return f"{len(ids)} x {ids[0]}" if len(set(ids)) == 1 else " + ".join(ids)


def run_text(cfg: Run, backend: Backend | None = None) -> dict[str, Any]:
    """``deliberate run --env text --task humaneval``: the coding baselines of
    :mod:`algorithms.text.eval` with a frozen team (SmolLM2 through the response cache, or
    ``backend``): table, ``results.json`` and ``reward_parts.png``. ``--n-problems`` counts
    HumanEval problems; about 8 take 10 minutes on 2 CPU cores the first time."""
    args = cfg.env_args
    if args.task != "humaneval":
        raise ValueError(f"--env text evaluates the coding baselines on task 'humaneval', got --task {args.task!r}")
    if not isinstance(args.team, str):
        raise TypeError(f"--env text runs a frozen team of one backend: give one --team spec, got {args.team!r}")
    started = time.perf_counter()
    if backend is None:
        backend = backend_from_spec(args.team, args.cache, args.offline)
    protocol = CodingProtocol(build_task(args))
    console.print(f"[bold]helper + main, 2 x {backend.model_id}[/bold] on humaneval ({args.split}, "
                  f"{cfg.n_problems} problems, {cfg.samples} sample(s) each)")
    summaries = text_eval.evaluate_baselines(
        protocol, backend, cfg.n_problems, samples=cfg.samples, seed=cfg.seed, split=args.split,
        temperature=SMOLLM2_TEMPERATURE if args.temperature is None else args.temperature,
    )
    elapsed = time.perf_counter() - started
    folder = cfg.out_dir / cfg.run_name()
    folder.mkdir(parents=True, exist_ok=True)
    title = f"helper + main, 2 x {backend.model_id} on humaneval"
    figure = text_eval.plot_reward_parts(summaries, folder / "reward_parts.png", title)
    record = {
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
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
    columns = ("policy", "acc@0", "acc@end", "cons@0", "cons@end", "answered", "cut", "tok/answer", "tok/problem")
    for column in (*columns, *ACTION_NAMES):
        if column == "policy":  # never cut a policy's name, however narrow the terminal
            table.add_column(column, min_width=max(len(r.policy) for r in results), no_wrap=True)
        else:
            table.add_column(column, justify="right")
    for r in results:
        shares = r.action_shares
        table.add_row(
            r.policy, f"{r.accuracy[0]:.3f}", f"{r.accuracy[-1]:.3f}", f"{r.consensus_accuracy[0]:.3f}",
            f"{r.consensus_accuracy[-1]:.3f}", f"{r.answered_share:.0%}", f"{r.cut_share:.0%}",
            f"{r.answer_tokens:.0f}", f"{r.tokens_per_problem:,.0f}", *(f"{shares[name]:.2f}" for name in ACTION_NAMES),
        )
    table.caption = (
        "acc: mean individual accuracy; cons: plurality consensus accuracy; @0: initial answers; answered: "
        "final answers with a decision (strict scoring: stated in the asked form, not cut); cut: final answers "
        "cut at the token budget; single agent and self-consistency k: the first member alone, k matching the "
        "costliest row's tokens"
    )
    return table


# ---------------------------------------------------------------------------- train/compare --env text
TEXT_COMPARE_FILE = "compare.json"
"""The results file of ``deliberate compare --env text`` (in ``<out_dir>/<name>/``)."""


@dataclass
class TextCompare:
    """Compare the LLM-weight learners (``algorithms.text``) over seeds on the same settings:
    a summary table and ``<out_dir>/<name>/compare.json``; each run's files in
    ``<out_dir>/<name>/<algo>/seed<k>/``."""

    learner: tyro.conf.OmitArgPrefixes[text_learners.TextLearnerConfig] = field(
        default_factory=text_learners.TextLearnerConfig
    )
    """The settings every learner shares (``--model``, ``--task``, ``--updates``, ...; no
    prefix). Those neither given nor changed keep each learner's own default (SoftRankPO's
    ``kl_coef`` 0.02); ``seed`` and ``run_dir`` are set per run."""
    algos: tuple[str, ...] = ("magrpo", "grpo", "softrankpo")
    """Learners to compare (``algorithms.text.TEXT_CONFIGS``)."""
    seeds: int = 2
    """Seeds per learner: 0 .. seeds-1."""
    name: str = "text-compare"
    """Results go to ``<out_dir>/<name>/``."""
    out_dir: Path = Path("runs")
    """Where run folders go."""
    given: tyro.conf.Suppress[frozenset[str]] = frozenset()
    """Shared settings given on the command line, even at their default (``--kl-coef 0``)."""

    def __post_init__(self) -> None:
        unknown = [a for a in self.algos if a not in text_learners.TEXT_CONFIGS]
        if unknown or not self.algos:
            raise ValueError(f"--algos must be a non-empty subset of {sorted(text_learners.TEXT_CONFIGS)}, got {self.algos}")
        if self.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {self.seeds}")

    def run_config(self, algo: str, seed: int) -> text_learners.TextLearnerConfig:
        """The config of ``algo`` at ``seed``: the shared settings given or changed over the
        learner's own defaults, and its run folder."""
        defaults = asdict(text_learners.TextLearnerConfig())
        given = {k: v for k, v in asdict(self.learner).items() if k in self.given or v != defaults[k]}
        run_dir = self.out_dir / self.name / algo / f"seed{seed}"
        return text_learners.TEXT_CONFIGS[algo](**{**given, "seed": seed, "run_dir": str(run_dir)})


def text_command(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(command, the other arguments)`` when ``argv`` is ``train|compare --env text ...``, else None.

    >>> text_command(["train", "--env", "text", "--algo", "grpo"])
    ('train', ['--algo', 'grpo'])
    """
    if not argv or argv[0] not in ("train", "compare"):
        return None
    for k, arg in enumerate(argv):
        if arg == "--env=text":
            return argv[0], argv[1:k] + argv[k + 1:]
        if arg == "--env" and k + 1 < len(argv) and argv[k + 1] == "text":
            return argv[0], argv[1:k] + argv[k + 2:]
    return None


def parse_text_train(
    args: list[str], data: dict[str, Any] | None = None, where: str = ""
) -> text_learners.TextLearnerConfig:
    """The learner config of ``deliberate train --env text --algo NAME ...`` (default magrpo),
    over the fields ``data`` of the config file ``where`` (its ``algo`` when no ``--algo``)."""
    data = dict(data or {})
    algo, rest = data.pop("algo", "magrpo"), list(args)
    for k, arg in enumerate(args):
        if arg.startswith("--algo="):
            algo, rest = arg.partition("=")[2], args[:k] + args[k + 1:]
        elif arg == "--algo":
            if k + 1 >= len(args):
                raise SystemExit("deliberate train --env text: --algo needs a name")
            algo, rest = args[k + 1], args[:k] + args[k + 2:]
    if not isinstance(algo, str) or algo not in text_learners.TEXT_CONFIGS:  # a file's algo may be a list
        raise SystemExit(
            f"deliberate train --env text: --algo must be one of {sorted(text_learners.TEXT_CONFIGS)}, got {algo!r}"
        )
    cls = text_learners.TEXT_CONFIGS[algo]
    default = config_files.build(cls, data, where) if data else None
    return tyro.cli(cls, args=rest, default=default, prog=f"deliberate train --env text --algo {algo}")


def train_text(config: text_learners.TextLearnerConfig) -> dict[str, Any]:
    """``deliberate train --env text``: train with :func:`algorithms.text.train`; print the
    last update's rewards and the held-out evaluation; return the final metrics."""
    result = text_learners.train(config)
    final = result.history[-1] if result.history else {}
    console.print(text_train_table(type(result.learner).__name__, final, result.before, result.after))
    if config.run_dir:
        console.print(f"wrote metrics.jsonl, checkpoint.safetensors, adapters and summary.json to {config.run_dir}")
    return {**final, **{f"after/{k}": v for k, v in result.after.items()}}


def text_train_table(title: str, final: dict[str, float], before: dict[str, float], after: dict[str, float]) -> Table:
    """The last update's metrics and the held-out evaluation before and after training."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("rewards/joint/mean", "rewards/correct/mean", "rewards/format/mean"):
        if key in final:
            table.add_row(f"last update {key}", f"{final[key]:.3f}")
    for key, value in before.items():
        table.add_row(f"held-out {key}", f"{value:.3f} -> {after[key]:.3f}")
    return table


TEXT_COMPARE_METRICS = (
    "rewards/joint/mean", "rewards/correct/mean", "eval/joint", "eval/correct", "eval/asked_form_share",
    "eval/truncated_share", "eval/mean_completion_tokens",
)
"""What ``compare --env text`` summarizes per learner: the last update's rewards and, with
``--eval-problems``, the held-out greedy evaluation after training (accuracy, and beside it
the share of answers in the asked form, the share cut at the budget and the length)."""


def compare_text(cfg: TextCompare) -> dict[str, Any]:
    """``deliberate compare --env text``: every learner x seed (:mod:`algorithms.core.compare`);
    table and ``compare.json``."""

    def train_one(algo: str, seed: int) -> dict[str, Any]:
        result = text_learners.train(cfg.run_config(algo, seed))
        final = result.history[-1] if result.history else {}
        return {"final": final, "before": result.before, "after": result.after}

    runs = run_grid(train_one, cfg.algos, cfg.seeds)
    summary = {
        algo: summarize_runs([{**r["final"], **r["after"]} for r in runs if r["algo"] == algo], TEXT_COMPARE_METRICS)
        for algo in cfg.algos
    }
    folder = cfg.out_dir / cfg.name
    record = {
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "env": "text-deliberation-v0",
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "summary": summary,
        "runs": runs,
    }
    (folder / TEXT_COMPARE_FILE).write_text(json.dumps(record, indent=2))
    table = summary_table(summary, TEXT_COMPARE_METRICS, f"LLM-weight learners, {cfg.seeds} seed(s), {cfg.learner.updates} updates")
    table.caption = "last update's rewards and held-out greedy evaluation after training; mean +- 95% CI over seeds"
    console.print(table)
    console.print(f"wrote {folder / TEXT_COMPARE_FILE}")
    return record


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
    task = de.tasks.get(show.name, **({"path": show.path} if show.path else {}))
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
    """Delete every cached response (asks first, showing what would go)."""

    path: Path | None = None
    """Cache file (default: ``~/.cache/deliberation_env/``)."""
    yes: bool = False
    """Do not ask (scripts; without a terminal to ask on, nothing is deleted without it)."""


@dataclass
class CacheMerge:
    """Merge the caches of several nodes into one (each node keeps its own: SQLite over a
    network file system is unsafe); rows are verified, conflicting rows refused."""

    out: tyro.conf.Positional[Path]
    """The merged cache (created if missing)."""
    inputs: tyro.conf.Positional[tuple[Path, ...]]
    """The nodes' cache files."""


@dataclass
class Cache:
    """Inspect, clear or merge SQLite response caches."""

    command: tyro.conf.OmitArgPrefixes[
        Annotated[CacheStats, tyro.conf.subcommand("stats", prefix_name=False)]
        | Annotated[CacheClear, tyro.conf.subcommand("clear", prefix_name=False)]
        | Annotated[CacheMerge, tyro.conf.subcommand("merge", prefix_name=False)]
    ]


def cache(cfg: Cache) -> None:
    """``deliberate cache stats|clear|merge``."""
    from agents.cache import DEFAULT_CACHE_PATH, cache_clear, cache_stats

    if isinstance(cfg.command, CacheMerge):
        from agents.cache_merge import merge_caches

        counts = merge_caches(cfg.command.out, cfg.command.inputs)
        console.print_json(json.dumps({"out": str(cfg.command.out), **counts}))
        return
    path = cfg.command.path or DEFAULT_CACHE_PATH
    if isinstance(cfg.command, CacheStats):
        console.print_json(json.dumps(cache_stats(path), default=str))
    else:
        stats = cache_stats(path)
        rows = stats["generations"] + stats["logprobs"]
        if not cfg.command.yes:
            if not sys.stdin.isatty():
                raise SystemExit(f"{path} holds {rows:,} cached responses: add --yes to delete them (no terminal to ask on)")
            answer = input(f"delete the {rows:,} cached responses of {path}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                console.print("nothing deleted")
                return
        cache_clear(path)
        console.print(f"cleared {path} ({rows:,} responses)")


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


WORKERS_FLAG = {"train": "--env.workers", "compare": "--train.env.workers"}
"""What ``--workers`` stands for in each subcommand (the env config's field)."""


def expand_workers_flag(argv: list[str]) -> list[str]:
    """``train|compare --workers N``: the env config's ``workers`` field under its nested name.

    >>> expand_workers_flag(["compare", "--workers=2", "--seeds", "3"])
    ['compare', '--train.env.workers=2', '--seeds', '3']
    """
    if not argv or argv[0] not in WORKERS_FLAG:
        return argv
    full = WORKERS_FLAG[argv[0]]
    return [full + arg[len("--workers"):] if arg == "--workers" or arg.startswith("--workers=") else arg for arg in argv]


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


CONFIGURABLE = {"run": Run, "train": harness.TrainConfig, "compare": harness.CompareConfig}
"""The subcommands that take ``--config FILE`` (:mod:`algorithms.core.config_files`)."""


def config_flag(args: list[str]) -> tuple[str | None, list[str]]:
    """``(the FILE of --config FILE, the other arguments)``; ``(None, args)`` without it.

    >>> config_flag(["train", "--config=a.yaml", "--updates", "3"])
    ('a.yaml', ['train', '--updates', '3'])
    """
    flag = next((k for k, arg in enumerate(args) if arg == "--config" or arg.startswith("--config=")), None)
    if flag is None:
        return None, list(args)
    _, equals, path = args[flag].partition("=")
    if equals:
        return path, args[:flag] + args[flag + 1:]
    return (args[flag + 1] if flag + 1 < len(args) else ""), args[:flag] + args[flag + 2:]


def parse(args: list[str]) -> Any:
    """The config of a command line; ``run|train|compare --config FILE ...`` starts from the
    file's values, which the other flags override. A ``train``/``compare`` file with
    ``env: text`` is for the LLM-weight learners (:func:`parse_text`)."""
    path, rest = config_flag(args)
    if path is None:
        return tyro.cli(Command, args=args, prog="deliberate")
    command = args[0] if args else ""
    if command not in CONFIGURABLE:
        raise SystemExit(f"deliberate: --config works with {', '.join(CONFIGURABLE)}, not {command!r}")
    if command in ("train", "compare") and config_files.read(path).get("env") == "text":
        return parse_text(command, args[1:])
    default = config_files.load(path, command, CONFIGURABLE[command])
    return tyro.cli(CONFIGURABLE[command], args=rest[1:], default=default, prog=f"deliberate {command}")


def read_text_config(path: str, command: str) -> dict[str, Any]:
    """The fields of a ``deliberate train|compare --env text`` config file (without its
    ``command`` and ``env: text``).

    Raises:
        ValueError: Naming the file, when it is for another command or env.
    """
    data = config_files.read(path)
    written_for, env = data.pop("command", None), data.pop("env", "text")
    if written_for != command or env != "text":
        raise ValueError(
            f"config file {path} is for 'deliberate {written_for}' (env {env!r}), not 'deliberate {command} --env text'"
        )
    return data


def parse_text(command: str, args: list[str]) -> text_learners.TextLearnerConfig | TextCompare:
    """The config of ``deliberate train|compare --env text ...``; ``--config FILE`` starts
    from the file's values (``algo`` and the learner's fields for ``train``; ``algos``,
    ``seeds``, ``learner: {...}`` ... for ``compare``), which the other flags override."""
    path, rest = config_flag(args)
    data = read_text_config(path, command) if path is not None else {}
    if command == "train":
        return parse_text_train(rest, data, path or "")
    default = config_files.build(TextCompare, data, path) if data else None
    compare = tyro.cli(TextCompare, args=rest, default=default, prog="deliberate compare --env text")
    flags = {arg[2:].split("=", 1)[0].replace("-", "_") for arg in rest if arg.startswith("--")}
    given = flags | set(data.get("learner", {}))
    return replace(compare, given=frozenset(given & set(asdict(compare.learner))))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deliberate`` console script."""
    logging.getLogger("deliberation_env.tasks").addHandler(data_log)  # once: the same handler object
    logging.getLogger("deliberation_env.tasks").setLevel(logging.INFO)
    args = split_comma_lists(sys.argv[1:] if argv is None else argv)
    text = text_command(args)
    cfg = parse(expand_workers_flag(args)) if text is None else parse_text(*text)
    if isinstance(cfg, TextCompare):
        compare_text(cfg)
    elif isinstance(cfg, text_learners.TextLearnerConfig):
        train_text(cfg)
    else:
        _HANDLERS[type(cfg)](cfg)


if __name__ == "__main__":
    main()
