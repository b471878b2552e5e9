"""``deliberate compare [meta|text]``: learners x seeds on the same env, problems and budget,
then a table of held-out results with 95% confidence intervals and the files written.

- ``deliberate compare`` (``compare meta``): the meta-policy learners, reward scales and the
  heuristic baselines (:mod:`algorithms.meta.compare`): CSVs, ``summary.json`` and plots.
- ``deliberate compare text``: the LLM-weight learners (:mod:`algorithms.text`):
  ``compare.json`` and each run's files.

Every comparison writes to a folder of its own, ``runs/compare/<family>-<algos>-<time>``,
unless ``--out-dir`` names one.
"""

from __future__ import annotations

import json
import operator
import time
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tyro

import deliberation_env as de
from algorithms.commands.common import check_choice, check_loggers, console, wrote_folder
from algorithms.commands.train import TEXT_ALGOS, TEXT_CURVES_FILE, check_run_dir_for
from algorithms.core.run_dirs import new_run_dir, open_run_dir
from algorithms.meta.config import CompareConfig, TrainConfig
from algorithms.text.config import TextLearnerConfig

if TYPE_CHECKING:
    from rich.table import Table

PER_RUN = {"algo": "--algos", "seed": "--seeds", "run_dir": "--out-dir"}
"""Run settings a comparison sets for each run, and the option that says them instead."""


def check_per_run_settings(template: Any, defaults: Any, names: tuple[str, ...]) -> None:
    """Refuse a run setting of ``names`` that a comparison sets per run (``--algo``: use
    ``--algos``), that is, one ``template`` gives another value than ``defaults``. A name
    may be dotted (``run.run_dir``: the ``run_dir`` of the template's ``run`` part)."""
    for name in names:
        read = operator.attrgetter(name)
        last = name.rpartition(".")[2]
        if read(template) != read(defaults):
            flag = "--" + last.replace("_", "-")
            raise ValueError(f"compare sets {flag} for each run: use {PER_RUN[last]} (got {flag} {read(template)!r})")


def compare_meta(cfg: CompareConfig) -> dict[str, Any]:
    """``deliberate compare``: every learner x seed x reward scale and the baselines
    (:func:`algorithms.meta.compare.compare`); print the held-out table and the files written;
    return the summary."""
    from algorithms.meta.compare import compare

    check_per_run_settings(cfg.train, TrainConfig(), ("algo", "seed", "run_dir"))
    if isinstance(cfg.train.env.task, str):
        check_choice("--task", cfg.train.env.task, de.tasks.names())
    check_loggers(cfg.train.tensorboard, cfg.train.wandb_project)
    check_run_dir_for(cfg.train.resume, cfg.out_dir)
    if not cfg.out_dir:
        cfg = replace(cfg, out_dir=str(new_run_dir("compare", "meta", "+".join(cfg.algos))))
    started = time.perf_counter()
    summary = compare(cfg)
    console.print(meta_compare_table(summary, cfg))
    wrote_folder(Path(cfg.out_dir), time.perf_counter() - started)
    return summary


def meta_compare_table(summary: dict[str, Any], cfg: CompareConfig) -> Table:
    """Held-out consensus accuracy per learner (at each reward scale) and per baseline:
    mean and 95% CI over seeds, and the share of the best-heuristic-to-oracle gap closed."""
    from rich.table import Table

    table = Table(title=f"held-out {summary['metric']}, {cfg.seeds} seed(s), {cfg.train.eval_problems} test problems")
    for column in ("policy", "mean", "95% CI", "seeds", "gap closed"):
        table.add_column(column, justify="left" if column == "policy" else "right")
    gap = summary.get("gap_closed", {})
    for name, stat in {**summary["learners"], **summary["baselines"]}.items():
        closed = gap.get(name)
        table.add_row(
            name, f"{stat['mean']:.3f}", f"+- {stat['ci95']:.3f}" if stat["n"] > 1 else "none (1 seed)", str(stat["n"]),
            "" if closed is None else f"{closed:+.0%}",
        )  # fmt: skip
    table.caption = (
        "learners as algo@reward scale; gap closed: (learner - best heuristic) / (oracle - best heuristic)"
        + (f", best heuristic {summary['best_heuristic']}" if "best_heuristic" in summary else "")
    )
    return table


TEXT_COMPARE_FILE = "compare.json"
"""The results file of ``deliberate compare text`` (in ``out_dir``)."""


PER_LEARNER_DEFAULTS = ("kl_coef",)
"""Shared settings whose default differs between the text learners (SoftRankPO's
``kl_coef`` is 0.02, the others' 0): :class:`SharedTextSettings` leaves them None unless
given, so that each learner keeps its own."""


@dataclass
class SharedTextSettings(TextLearnerConfig):
    """The settings every compared text learner gets (``compare text``'s options): a
    :class:`~algorithms.text.config.TextLearnerConfig`, but a setting of
    :data:`PER_LEARNER_DEFAULTS` is None unless given, so that a value given on the command
    line or in a config file applies to every learner (``--kl-coef 0`` too, though it is
    the shared default) and, when none is given, each learner keeps its own default."""

    kl_coef: float | None = None
    """beta: weight of KL(pi || base) for every learner (0 switches it off); None: each
    learner's own (SoftRankPO 0.02, MAGRPO and GRPO 0)."""

    def __post_init__(self) -> None:
        given = {name: getattr(self, name) for name in PER_LEARNER_DEFAULTS}
        for name, value in given.items():  # checked as any learner's value would be
            setattr(self, name, 0.0 if value is None else value)
        try:
            super().__post_init__()
        finally:
            for name, value in given.items():
                setattr(self, name, value)

    def learner_keywords(self) -> dict[str, Any]:
        """The shared fields as keywords of a learner config, without those of
        :data:`PER_LEARNER_DEFAULTS` not given."""
        values = {f.name: getattr(self, f.name) for f in fields(TextLearnerConfig)}
        return {name: value for name, value in values.items() if not (name in PER_LEARNER_DEFAULTS and value is None)}


@dataclass
class TextCompare:
    """Compare the LLM-weight learners (``algorithms.text``) over seeds on the same settings:
    a summary table and ``<out_dir>/compare.json``; each run's files in
    ``<out_dir>/<algo>/seed<k>/``."""

    learner: tyro.conf.OmitArgPrefixes[SharedTextSettings] = field(default_factory=SharedTextSettings)
    """The settings every learner shares (``--model``, ``--task``, ``--updates``, ...; no
    prefix; :class:`SharedTextSettings`): ``--kl-coef`` given applies to every learner, left
    out each keeps its own (SoftRankPO's 0.02); ``seed`` and ``run_dir`` are set per run."""
    algos: tuple[str, ...] = tuple(TEXT_ALGOS.values())
    """Learners to compare, separated by spaces (``algorithms.text.TEXT_CONFIGS``)."""
    seeds: int = 2
    """Seeds per learner: 0 .. seeds-1."""
    out_dir: str = ""
    """Folder of compare.json and every run's files; ``""``: a new one,
    ``runs/compare/text-<algos>-<YYYYmmdd-HHMMSS>``."""

    def __post_init__(self) -> None:
        for algo in self.algos:
            check_choice("--algos", algo, tuple(TEXT_ALGOS.values()))
        if not self.algos:
            raise ValueError(f"--algos must name at least one of {', '.join(TEXT_ALGOS.values())}")
        if self.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {self.seeds}")

    def run_config(self, algo: str, seed: int) -> TextLearnerConfig:
        """The config of ``algo`` at ``seed``: built from the shared settings (each
        learner's own default where one of :data:`PER_LEARNER_DEFAULTS` is not given), with
        its run folder."""
        from algorithms import text as text_learners

        shared = self.learner.learner_keywords()
        run_dir = str(Path(self.out_dir) / algo / f"seed{seed}")
        return text_learners.TEXT_CONFIGS[algo](**{**shared, "seed": seed, "run": replace(shared["run"], run_dir=run_dir)})


TEXT_COMPARE_METRICS = (
    "rewards/joint/mean", "rewards/correct/mean", "eval/joint", "eval/correct", "eval/asked_form_share",
    "eval/truncated_share", "eval/mean_completion_tokens",
)
"""What ``compare text`` summarizes per learner: the last update's rewards and, with
``--eval-problems``, the held-out greedy evaluation after training (accuracy, and beside it
the share of answers in the asked form, the share cut at the budget and the length)."""


def compare_text_command(cfg: TextCompare) -> dict[str, Any]:
    """``deliberate compare text``: check the settings, give the comparison its folder, and
    run :func:`compare_text`."""
    check_per_run_settings(cfg.learner, SharedTextSettings(), ("seed", "run.run_dir"))
    check_loggers(cfg.learner.run.tensorboard, cfg.learner.run.wandb_project)
    if not cfg.out_dir:
        cfg = replace(cfg, out_dir=str(new_run_dir("compare", "text", "+".join(cfg.algos))))
    open_run_dir(cfg.out_dir, json.loads(json.dumps(asdict(cfg), default=str)), resume=False)
    return compare_text(cfg)


def compare_text(cfg: TextCompare) -> dict[str, Any]:
    """``deliberate compare text``: every learner x seed (:mod:`algorithms.core.compare`);
    table and ``compare.json``."""
    from algorithms import text as text_learners
    from algorithms.core.compare import run_grid, summarize_runs, summary_table
    from algorithms.text.plots import learning_curves

    histories: dict[str, list[list[dict[str, float]]]] = {algo: [] for algo in cfg.algos}

    def train_one(algo: str, seed: int) -> dict[str, Any]:
        result = text_learners.train(cfg.run_config(algo, seed))
        histories[algo].append(result.history)
        final = result.history[-1] if result.history else {}
        return {"final": final, "before": result.before, "after": result.after}

    runs = run_grid(train_one, cfg.algos, cfg.seeds)
    summary = {
        algo: summarize_runs([{**r["final"], **r["after"]} for r in runs if r["algo"] == algo], TEXT_COMPARE_METRICS)
        for algo in cfg.algos
    }
    folder = Path(cfg.out_dir)
    record = {
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "env": "text-deliberation-v0",
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "summary": summary,
        "runs": runs,
    }
    (folder / TEXT_COMPARE_FILE).write_text(json.dumps(record, indent=2))
    figure = learning_curves(
        histories, folder / TEXT_CURVES_FILE, f"{cfg.learner.env.task}, {cfg.seeds} seed(s): joint reward per update"
    )
    table = summary_table(summary, TEXT_COMPARE_METRICS, f"LLM-weight learners, {cfg.seeds} seed(s), {cfg.learner.run.updates} updates")
    table.caption = "last update's rewards and held-out greedy evaluation after training; mean +- 95% CI over seeds"
    console.print(table)
    console.print(f"wrote {folder / TEXT_COMPARE_FILE}")
    console.print(f"wrote {figure}")
    return record
