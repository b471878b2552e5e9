"""``deliberate run [meta|text]``: evaluate fixed protocols with a team, the README's main job.

- ``deliberate run`` (``run meta``): the heuristic baselines of the meta-action env and the
  compute-matched single agent and self-consistency rows; a table, ``results.json`` and plots.
- ``deliberate run text``: the MAGRPO paper's coding baselines on HumanEval with a frozen
  team of one backend; a table, ``results.json`` and ``reward_parts.png``.

Each run writes to a folder of its own, ``runs/run/<family>-<team>-<task>-seed<seed>-<time>``,
unless ``--run-dir`` names one. Heavy modules (torch, the models) load inside the
functions, so that ``deliberate --help`` stays fast.
"""

from __future__ import annotations

import json
import platform
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import tyro

import deliberation_env as de
from algorithms.commands.common import check_choice, console, wrote
from algorithms.core.run_dirs import new_run_dir
from algorithms.text.config import ChatTemplateKwargs
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.spaces import ACTION_NAMES
from deliberation_env.task_config import TaskSource

if TYPE_CHECKING:
    from rich.table import Table

    from agents.base import Backend, Solver
    from algorithms.meta.evaluate import EvalResult

BASELINES = ("independent", "debate", "minority-concedes", "confidence-threshold", "random", "oracle")
"""The heuristic baselines ``--policies`` takes (:mod:`algorithms.meta.baselines`)."""


def main_job_env() -> EnvConfig:
    """The main job's env: three SmolLM2 agents, held-out arithmetic, two rounds."""
    return EnvConfig(team="smollm2", split="test", max_rounds=2)


@dataclass
class RunMeta:
    """Evaluate the heuristic baselines with a team on a task (the meta-action env): a
    table, results.json and plots in a folder of the run's own."""

    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=main_job_env)
    """The env (:class:`deliberation_env.meta.config.EnvConfig`): ``--task``, ``--path``,
    ``--team``, ``--n-agents``, ``--max-rounds``, ``--temperature``, ..."""
    n_problems: int = 24
    """Held-out problems to evaluate on (the first n of the split); 24 take the SmolLM2
    team about 5 minutes on 2 CPU cores."""
    policies: tuple[str, ...] = ("independent", "debate", "minority-concedes", "confidence-threshold")
    """Baselines to evaluate (:mod:`algorithms.meta.baselines`), separated by spaces."""
    num_envs: int | None = None
    """Episodes stepped together (one backend call per phase for all of them); None: every
    problem at once, the largest batch (the episodes are the same for any value: seeds
    follow the problem)."""
    seed: int = 0
    """Evaluation seed (episode seeds derive from it and the problem)."""
    run_dir: str = ""
    """Folder of results.json and the plots; ``""``: a new one,
    ``runs/run/meta-<team>-<task>-seed<seed>-<time>``."""
    progress: bool = True
    """Show progress on stderr: rounds played per policy and the requests done of each LLM call."""

    def __post_init__(self) -> None:
        if self.n_problems < 1:
            raise ValueError(f"--n-problems must be >= 1, got {self.n_problems}")
        if self.num_envs is not None and self.num_envs < 1:
            raise ValueError(f"--num-envs must be >= 1 (or left out: every problem at once), got {self.num_envs}")
        if self.env.workers:
            raise ValueError("run evaluates in this process: --env-workers is for train and compare")
        for policy in self.policies:
            check_choice("--policies", policy, BASELINES)

    def folder(self) -> Path:
        """``run_dir``, or a new folder named after the team, task and seed."""
        if self.run_dir:
            return Path(self.run_dir)
        return new_run_dir("run", "meta", f"{team_name(self.env.team)}-{task_name(self.env.task)}-seed{self.seed}")


@dataclass
class RunText(TaskSource):
    """Evaluate the MAGRPO paper's coding baselines (single, concatenation, pipeline,
    discussion) with a frozen team of one backend on HumanEval (the text-action env): a
    table, results.json and reward_parts.png in a folder of the run's own."""

    # TaskSource's fields (the task, its data, the split) with this command's defaults:
    task: Literal["humaneval"] = "humaneval"
    """The task: HumanEval, whose tests judge the team's program."""
    split: str = "test"
    """Problem split, ``train`` or ``test``."""
    task_kwargs: dict[str, int | float | str] | None = None
    """Further keyword arguments of the task (``de.tasks.get(task, **task_kwargs)``):
    ``{split_rule: comlrl}`` plays CoMLRL's split, whose test problems (HumanEval/0-31) are
    the MAGRPO paper's and a ``train text`` run's held-out ones under the same rule."""
    team: str = "smollm2"
    """The backend spec of both agents (``deliberate run --help`` lists the specs; after a
    ``transformers:`` model, ``#device=<d>``, ``#dtype=<t>`` and
    ``#chat_template_kwargs=<JSON object>``, which ``--chat-template-kwargs`` also gives)."""
    chat_template_kwargs: ChatTemplateKwargs = field(default_factory=dict)
    """Variables the chat template reads besides the messages (TRL's
    ``chat_template_kwargs``; ``'{"enable_thinking": false}'`` for Qwen3, a JSON object),
    given to ``--team``'s backend as its ``#chat_template_kwargs`` (a transformers:,
    ctranslate2:<model> or vllm: spec); ``{}``: none."""
    temperature: float | None = None
    """Sampling temperature (None: SmolLM2's default)."""
    top_p: float = 0.95
    """Nucleus mass of sampling, in (0, 1] (CoMLRL's and TRL's ``top_p``)."""
    max_tokens: int = 256
    """Most tokens per completion (CoMLRL's ``max_new_tokens``)."""
    cache: str | None = None
    """SQLite response cache (None: ``~/.cache/deliberation_env/``)."""
    offline: bool = False
    """Serve every call from the cache; a miss is an error."""
    n_problems: int = 8
    """HumanEval problems to evaluate on (the first n); 8 take SmolLM2 about 10 minutes on
    2 CPU cores the first time."""
    samples: int = 1
    """Samples per problem (pass@k and accuracy@k for every k <= samples)."""
    seed: int = 0
    """Evaluation seed."""
    progress: bool = True
    """Show progress on stderr: the baselines done and the requests done of each LLM call."""
    run_dir: str = ""
    """Folder of results.json and the plot; ``""``: a new one,
    ``runs/run/text-<team>-humaneval-seed<seed>-<time>``."""

    def __post_init__(self) -> None:
        from agents.specs import check_spec, with_chat_template_kwargs

        check_spec(self.team)
        with_chat_template_kwargs(self.team, self.chat_template_kwargs)  # a backend that takes them
        for name in ("n_problems", "samples", "max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        check_choice("--split", self.split, ("train", "test"))
        if not 0 < self.top_p <= 1:
            raise ValueError(f"--top-p must lie in (0, 1], got {self.top_p}")

    def folder(self) -> Path:
        """``run_dir``, or a new folder named after the team and seed."""
        if self.run_dir:
            return Path(self.run_dir)
        return new_run_dir("run", "text", f"{team_name(self.team)}-{self.task}-seed{self.seed}")


def team_name(team: Any) -> str:
    """A folder-safe name of a team spec (``smollm2``, ``simulated+smollm2``): what follows
    its last ``/``, each character but letters, digits and ``.=+-_`` a ``-`` (a spec's ``:``
    and ``#``, and the JSON of its ``#chat_template_kwargs``).

    >>> team_name('transformers:/m/qwen#chat_template_kwargs={"enable_thinking":false}')
    'qwen-chat_template_kwargs=--enable_thinking--false-'
    """
    specs = "+".join(map(str, team)) if isinstance(team, tuple) else str(team)
    return re.sub(r"[^\w.=+-]", "-", specs.rsplit("/", 1)[-1])


def task_name(task: Any) -> str:
    """The name of a task given by name or instance."""
    return task if isinstance(task, str) else task.name


def record_header(config: Any, elapsed: float) -> dict[str, Any]:
    """What every ``results.json`` starts with: the config, versions, date and machine."""
    return {
        "config": json.loads(json.dumps(asdict(config), default=str)),
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}",
        "elapsed_s": round(elapsed, 1),
    }


def run_meta(cfg: RunMeta) -> dict[str, Any]:
    """The main job (see :class:`RunMeta`); returns what it writes to ``results.json``."""
    from algorithms.meta import baselines, plots
    from algorithms.meta.compute_matched import compute_matched
    from algorithms.meta.evaluate import evaluate_rounds
    from deliberation_env.arguments import build_task
    from deliberation_env.meta.team import build_team
    from deliberation_env.tasks import problem_count

    started = time.perf_counter()
    args = cfg.env
    task = build_task(args)  # loaded once (before any model): it sizes the vector env and is handed to it
    n_problems = problem_count(cfg.n_problems, len(task.problems(args.split)), args.split, "--n-problems")
    team = build_team(args)  # the built members hold the sampling settings of their specs already
    num_envs = cfg.num_envs or n_problems
    venv = de.vector_env_from(
        args, num_envs, team=team, task=task, path=None, difficulty=None, task_kwargs=None, temperature=None,
        max_tokens=None, top_k=None,
    )  # fmt: skip
    model_id = team_title(team)
    kind = "SIMULATED team, no LLM" if all(s.model_id.startswith("simulated") for s in team) else "LLM team"
    console.print(f"[bold]{model_id}[/bold] ({kind}) on {task.name} ({args.split}, "
                  f"{n_problems} problems, {args.max_rounds} round{'s' * (args.max_rounds != 1)})")  # fmt: skip
    results = [
        evaluate_rounds(baselines.get(name), venv, range(n_problems), seed=cfg.seed, progress=cfg.progress)
        for name in cfg.policies
    ]
    matched = compute_matched(team[0], args, results, range(n_problems), cfg.seed, num_envs, cfg.progress)
    elapsed = time.perf_counter() - started

    folder = cfg.folder()
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{model_id} on {task.name}"
    figures = [
        plots.accuracy_per_round(results, folder / "accuracy_per_round.png", title, matched, args.split),
        plots.reliability_diagram(results, folder / "reliability.png", f"Introspective confidence\n{model_id}"),
    ]
    model_ids = sorted({solver.model_id for solver in team})
    record = {
        **record_header(cfg, elapsed),
        "model_id": model_ids[0] if len(model_ids) == 1 else [solver.model_id for solver in team],
        "team_kind": kind,
        "env": "deliberation-v1",
        "results": [r.summary() for r in results],
        "compute_matched": [r.summary() for r in matched],
        "figures": [str(f) for f in figures],
    }
    (folder / "results.json").write_text(json.dumps(record, indent=2))
    console.print(results_table([*results, *matched], title))
    wrote([folder / "results.json", *figures], elapsed)
    return record


def team_title(team: list[Solver]) -> str:
    """``3 x <model id>`` for a homogeneous team, else the model ids joined by ``+``."""
    ids = [solver.model_id for solver in team]
    return f"{len(ids)} x {ids[0]}" if len(set(ids)) == 1 else " + ".join(ids)


def run_text(cfg: RunText, backend: Backend | None = None) -> dict[str, Any]:
    """``deliberate run text``: the coding baselines of :mod:`algorithms.text.eval` with a
    frozen team (the ``--team`` spec through the response cache, or ``backend``); returns
    what it writes to ``results.json``."""
    from agents import SMOLLM2_TEMPERATURE
    from agents.specs import backend_from_spec, with_chat_template_kwargs
    from algorithms.text import eval as text_eval
    from algorithms.text.plots import reward_parts
    from deliberation_env.text import CodingProtocol

    started = time.perf_counter()
    task = de.tasks.get(cfg.task, **({"path": cfg.path} if cfg.path else {}), **(cfg.task_kwargs or {}))
    if backend is None:
        backend = backend_from_spec(with_chat_template_kwargs(cfg.team, cfg.chat_template_kwargs), cfg.cache, cfg.offline)
    console.print(f"[bold]helper + main, 2 x {backend.model_id}[/bold] on {cfg.task} ({cfg.split}, "
                  f"{cfg.n_problems} problems, {cfg.samples} sample(s) each)")  # fmt: skip
    summaries = text_eval.evaluate_baselines(
        CodingProtocol(task), backend, cfg.n_problems, samples=cfg.samples, seed=cfg.seed, split=cfg.split,
        max_tokens=cfg.max_tokens, temperature=SMOLLM2_TEMPERATURE if cfg.temperature is None else cfg.temperature, top_p=cfg.top_p,
        progress=cfg.progress,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    folder = cfg.folder()
    folder.mkdir(parents=True, exist_ok=True)
    title = f"helper + main, 2 x {backend.model_id} on {cfg.task}"
    figure = reward_parts(summaries, folder / "reward_parts.png", title)
    record = {
        **record_header(cfg, elapsed),
        "model_id": backend.model_id,
        "env": "text-deliberation-v1",
        "protocol": "coding",
        "results": summaries,
        "figures": [str(figure)],
    }
    (folder / "results.json").write_text(json.dumps(record, indent=2))
    console.print(text_eval.results_table(summaries, title))
    wrote([folder / "results.json", figure], elapsed)
    return record


def results_table(results: list[EvalResult], title: str) -> Table:
    """A rich table of evaluation results."""
    from rich.table import Table

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
        )  # fmt: skip
    table.caption = (
        "acc: mean individual accuracy; cons: plurality consensus accuracy; @0: initial answers; answered: "
        "final answers with a decision (strict scoring: stated in the asked form, not cut); cut: final answers "
        "cut at the token budget"
    )
    if any(r.policy == "single agent" for r in results):  # footnote only the rows the table has
        table.caption += "; single agent and self-consistency k: the first member alone, k matching the costliest row's tokens"
    return table
