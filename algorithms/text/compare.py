"""Optimizer comparisons of the text family: the LLM-weight learners over seeds on the same
settings (``deliberate compare text``).

``compare(TextCompare(...), learners=None)`` trains every learner for every seed with the
settings they share (a template :class:`~algorithms.text.config.TextLearnerConfig`; the shared loop of both families,
:func:`~algorithms.core.compare.run_grid`), each run in ``<out_dir>/<algo>/seed<k>/``, and
writes to ``out_dir`` the files of every comparison (:mod:`algorithms.core.compare`:
``compare.csv`` with each run's last update's rewards and held-out evaluation after training;
``curves.csv``; ``compare.json`` whose ``summary`` holds the mean and 95% CI over seeds of
:data:`METRICS` per learner, and ``incidental_spread`` (:data:`INCIDENTAL_SPREAD`); ``learning_curves.png``: joint reward per update;
``final_accuracy.png``: :func:`algorithms.text.plots.final_accuracy`).

A learner of one's own (``learners={"mine": Mine}``, or an import path in ``algos``) is built
as the shipped ones are, ``Mine(config, lm, venv, frozen, sampler=sampler)``
(:func:`algorithms.text.train`): ``config`` is the :class:`~algorithms.text.config.TextGRPOConfig`
of the shared settings, or the learner's ``config_class`` where that derives from a shipped
learner's config (:func:`~algorithms.core.compare.config_of_own`), so a subclass of a
shipped learner or of :class:`~algorithms.text.base.TextPolicyGradientLearner` that
overrides ``compute_advantages`` is one; its ``summary_metrics`` join :data:`METRICS` in
the summary and the table (``examples/15_custom_text_learner.py``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tyro

from algorithms.core.compare import (
    LearnerFactory,
    algo_names,
    check_algos,
    check_own_settings,
    check_per_run_settings,
    check_takes_config,
    config_of_own,
    difference_lines,
    learner_config,
    learner_label,
    own_settings,
    refused_for,
    run_grid,
    settings_taken,
    summarize_runs,
    summary_table,
    user_learners,
    write_results,
)
from algorithms.core.config import RunConfig, run_settings
from algorithms.core.run_dirs import (
    CONFIG,
    check_resumed_runs,
    holds_run,
    new_run_dir,
    open_run_dir,
    removed_if_nothing_ran,
)
from algorithms.text.config import (
    TEXT_CONFIGS,
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPOConfig,
    TextSoftRankPOConfig,
)

if TYPE_CHECKING:
    from rich.table import Table

    from algorithms.core.data_parallel import Ranks

RESUMED_MAY_CHANGE = (
    "out_dir",
    *run_settings("learner.run."),
    *(f"learner.{name}" for name in TextLearnerConfig.RUN_FIELDS if name not in {f.name for f in fields(RunConfig)}),
)
"""The comparison's settings a resumed comparison may change: its folder, and what each of
its runs may (``TextLearnerConfig.RUN_FIELDS``: where and how the rollouts are sampled and
the loss computed, ``--device``, ``--sample-batch-size``, ``--master-weights``...); each run
checks its own on top (the dtype against its checkpoint's)."""

SHIPPED = tuple(TEXT_CONFIGS)
"""The text learners by name (``magrpo``, ``grpo``, ``softrankpo``)."""
METRICS = (
    "rewards/joint/mean", "rewards/correct/mean", "eval/joint", "eval/correct", "eval/pass_rate",
    "eval/asked_form_share", "eval/truncated_share", "eval/mean_completion_tokens",
)  # fmt: skip
"""What a comparison summarizes per learner: the last update's rewards and, with
``--eval-problems``, the held-out greedy evaluation after training (accuracy, or on the
coding protocol the pass rate, and beside it the share of answers in the asked form, the
share cut at the budget and the length)."""

INCIDENTAL_SPREAD = {"largest": 0.188, "mean": 0.073, "runs": 6}
"""How far one seed's held-out accuracy moved under changes that leave the method the same
(micro-batches of 4 in place of 8, the torch sampler in place of CTranslate2): the
largest and mean absolute difference over the runs measured, on the strict learning
table's settings (two SmolLM2-135M agents on arithmetic, 16 updates, 48 held-out
problems; BENCHMARKS.md, "The spread a reader should expect"). A test checks it against
``benchmarks/results/incidental_spread.json``. Other settings have their own:
``benchmarks/incidental_spread.py`` measures it."""


def summarized_metrics(learners: Iterable[LearnerFactory]) -> tuple[str, ...]:
    """What a comparison summarizes: :data:`METRICS`, then each learner of one's own's
    ``summary_metrics`` (:attr:`algorithms.core.learner.Learner.summary_metrics`: metrics its
    updates log, such as ``adv/loo_baseline``), each once.

    >>> class Mine:
    ...     summary_metrics = ("mine/baseline", "eval/joint")
    >>> summarized_metrics([Mine])[len(METRICS):]
    ('mine/baseline',)
    """
    own = (metric for learner in learners for metric in getattr(learner, "summary_metrics", ()))
    return tuple(dict.fromkeys((*METRICS, *own)))


def incidental_line() -> str:
    """What :func:`compare_table`'s caption says of :data:`INCIDENTAL_SPREAD`."""
    spread = INCIDENTAL_SPREAD
    return (
        f"for scale: on the strict arithmetic table of two SmolLM2 agents (BENCHMARKS.md), one seed's held-out "
        f"accuracy moved by up to {spread['largest']:.3f} (mean {spread['mean']:.3f}, {spread['runs']} runs) under "
        "changes that leave the method the same, so a difference between learners must exceed that too; other "
        "settings have their own (benchmarks/incidental_spread.py measures it)"
    )


TextMAGRPOOwn = own_settings(TextMAGRPOConfig, TextLearnerConfig, "TextMAGRPOOwn", __name__)
TextGRPOOwn = own_settings(TextGRPOConfig, TextLearnerConfig, "TextGRPOOwn", __name__)
TextSoftRankPOOwn = own_settings(TextSoftRankPOConfig, TextLearnerConfig, "TextSoftRankPOOwn", __name__)


@dataclass
class TextCompare:
    """Compare the LLM-weight learners (``algorithms.text``) over seeds on the same settings:
    a summary table and the comparison's files in ``out_dir``; each run's files in
    ``<out_dir>/<algo>/seed<k>/``."""

    learner: tyro.conf.OmitArgPrefixes[TextLearnerConfig] = field(default_factory=TextLearnerConfig)
    """The template of every run: the settings every learner shares (``--model``, ``--task``,
    ``--updates``, ``--kl-coef``, ...; no prefix); each learner's own settings are the
    fields named after it (``--grpo.scale-rewards``); ``seed`` and ``run_dir`` are set per run."""
    algos: algo_names(SHIPPED) = SHIPPED
    """Learners to compare, separated by spaces (magrpo, grpo, softrankpo); a learner of your
    own by import path, ``./mine.py:Mine`` (on the command line; from Python, a name given in
    ``learners=`` of :func:`compare`), with GRPO's config, or its own ``config_class`` where
    that derives from a shipped learner's."""
    seeds: int = 2
    """Seeds per learner: 0 .. seeds-1."""
    out_dir: str = ""
    """Folder of the comparison's files and every run's; ``""``: a new one,
    ``runs/compare/text-<algos>-<YYYYmmdd-HHMMSS>``."""
    magrpo: TextMAGRPOOwn = field(default_factory=TextMAGRPOOwn)
    """MAGRPO's own settings (``--magrpo.baseline rloo``)."""
    grpo: TextGRPOOwn = field(default_factory=TextGRPOOwn)
    """GRPO's own settings (``--grpo.scale-rewards none``), also those of a learner of your own
    whose config is GRPO's or derives from it (one derived from another learner's config takes
    that learner's)."""
    softrankpo: TextSoftRankPOOwn = field(default_factory=TextSoftRankPOOwn)
    """SoftRankPO's own settings (``--softrankpo.tau 0.3``)."""

    def __post_init__(self) -> None:
        check_algos(self.algos)
        if self.seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {self.seeds}")
        check_own_settings(self, self.algos, SHIPPED, SHIPPED)

    def run_config(self, algo: str, seed: int, learner: LearnerFactory | None = None) -> TextLearnerConfig:
        """The config of the learner named ``algo`` at ``seed``: built from the template's
        shared settings and the learner's own, with its run folder. A learner of one's own
        (``learner``, its class) gets its ``config_class`` where that derives from a shipped
        learner's config, with that learner's own settings, and GRPO's config and settings
        otherwise (:func:`~algorithms.core.compare.config_of_own`)."""
        shared = {f.name: getattr(self.learner, f.name) for f in fields(TextLearnerConfig)}
        run_dir = str(Path(self.out_dir) / algo / f"seed{seed}")
        resume = shared["run"].resume and holds_run(Path(run_dir))  # a resumed comparison: the runs it has started
        shared = {**shared, "seed": seed, "run": replace(shared["run"], run_dir=run_dir, resume=resume)}
        if algo in TEXT_CONFIGS:
            return learner_config(TEXT_CONFIGS[algo], shared, getattr(self, algo))
        config, shipped = config_of_own(learner, TEXT_CONFIGS, TextLearnerConfig)
        return learner_config(config, shared, getattr(self, shipped) if shipped else None)


def compare(cfg: TextCompare, learners: Mapping[str, LearnerFactory] | None = None) -> dict[str, Any]:
    """Run the comparison, write its files (see the module docstring) and return the summary,
    learner -> metric -> :func:`~algorithms.core.compare.mean_ci`.

    Args:
        cfg: The comparison.
        learners: Learners of one's own by name, each named in ``cfg.algos`` too.

    Raises:
        ValueError: Before anything is written, on a name of ``cfg.algos`` that is no
            learner, a setting one of them refuses, a device this machine lacks, or an
            ``out_dir`` that holds a comparison.
    """
    from algorithms.core import data_parallel  # torch: not at import (``--help``)
    from algorithms.text.train import resolved_placement

    check_per_run_settings(cfg.learner, TextLearnerConfig(), ("seed", "run.resume_from"))  # a run_dir is replaced
    own = user_learners(cfg.algos, SHIPPED, learners, "text")
    check_own_settings(cfg, cfg.algos, SHIPPED, SHIPPED, settings_taken(cfg.algos, own, TEXT_CONFIGS, TextLearnerConfig))
    for algo in cfg.algos:  # a setting a learner refuses (MAGRPO's --update-epochs 2): before the first run, not after
        factory = own.get(learner_label(algo))
        with refused_for(algo):
            check_takes_config(algo, factory, type(cfg.run_config(algo, 0, factory)))
    resolved_placement(cfg.learner.device, cfg.learner.dtype)  # a device this machine lacks: before any file
    restarted = data_parallel.restarted_run(cfg.out_dir, "--out-dir")  # torchrun --max-restarts: continue it
    with data_parallel.process_group(cfg.learner.device) as ranks:  # under torchrun: one group for every run
        names = [learner_label(algo) for algo in cfg.algos]
        if not cfg.out_dir:
            cfg = replace(cfg, out_dir=str(new_run_dir("compare", "text", "+".join(names))))
        cfg = replace(cfg, out_dir=data_parallel.broadcast_object(cfg.out_dir))  # one folder: rank 0's
        if restarted:
            cfg = replace(cfg, learner=replace(cfg.learner, run=replace(cfg.learner.run, resume=True)))
        return _compare(cfg, own, names, ranks)


def _compare(cfg: TextCompare, own: dict[str, Any], names: list[str], ranks: Ranks) -> dict[str, Any]:
    """:func:`compare`'s runs, in this process's group; rank 0 alone writes the folder."""
    from algorithms.core import data_parallel
    from algorithms.text.plots import write_comparison
    from algorithms.text.train import kept_dtype, resolved_placement, train

    settings = json.loads(json.dumps(asdict(cfg), default=str))
    histories: dict[str, list[list[dict[str, float]]]] = {name: [] for name in names}

    def train_one(name: str, seed: int) -> dict[str, Any]:
        result = train(cfg.run_config(name, seed, own.get(name)), learner=own.get(name))
        histories[name].append(result.history)
        final = result.history[-1] if result.history else {}
        return {**final, **result.after, **{f"before/{k}": v for k, v in result.before.items()}}

    if cfg.learner.run.resume:  # before its config is rewritten: no run may end before where it is, nor change its dtype
        check_resumed_runs(cfg.out_dir, cfg.learner.run.updates)
        given = resolved_placement(cfg.learner.device, cfg.learner.dtype)["resolved_dtype"]
        for run in sorted(Path(cfg.out_dir).glob(f"*/*/{CONFIG}")):
            kept_dtype(cfg.learner, run.parent, given)
    out_dir = Path(cfg.out_dir)
    with removed_if_nothing_ran(cfg.out_dir) if ranks.writes else contextlib.nullcontext():  # none if it cannot start
        refused = None
        if ranks.writes:
            try:
                out_dir = open_run_dir(cfg.out_dir, settings, cfg.learner.run.resume, RESUMED_MAY_CHANGE, flag="--out-dir")
            except ValueError as error:
                refused = str(error)
        refused = data_parallel.broadcast_object(refused)  # the others start once rank 0 has checked the folder
        if refused is not None:  # every rank says why, none waits for the others
            raise ValueError(refused)
        rows = run_grid(train_one, names, cfg.seeds)
    metrics = summarized_metrics(own.values())
    summary = {name: summarize_runs([row for row in rows if row["algo"] == name], metrics) for name in names}
    curves = [
        {"algo": name, "seed": seed, **record}
        for name, seeds in histories.items()
        for seed, history in enumerate(seeds)
        for record in history
    ]
    if ranks.writes:
        record = {"config": asdict(cfg), "env": "text-deliberation-v1", "summary": summary, "incidental_spread": INCIDENTAL_SPREAD}
        write_results(out_dir, record, rows, curves)
        title = f"{cfg.learner.env.played()}, {cfg.seeds} seed(s): joint reward per update"
        write_comparison(out_dir, histories, rows, title)
    return summary


def compare_table(summary: dict[str, Any], cfg: TextCompare) -> Table:
    """The summary as a table: mean +- 95% CI over seeds of each of :data:`METRICS` that the
    runs have, per learner; under it, whether the seeds show each pair of learners'
    difference in held-out accuracy (:func:`~algorithms.core.compare.difference_lines`; on the
    coding protocol its pass rate; the held-out joint reward where the task scores no accuracy, as a protocol of one's own may;
    the last update's joint reward without a held-out evaluation), and how far one seed moves
    under incidental changes (:data:`INCIDENTAL_SPREAD`)."""
    own = [metric for row in summary.values() for metric in row if metric not in METRICS]  # summary_metrics
    table = summary_table(summary, [*METRICS, *dict.fromkeys(own)], f"LLM-weight learners, {cfg.seeds} seed(s), {cfg.learner.run.updates} updates")
    compared = ("eval/correct", "eval/pass_rate", "eval/joint", "rewards/joint/mean")  # held-out first; a task of one's own may score no "correct"
    metric = next((m for m in compared if any(m in row for row in summary.values())), "")
    learners = {name: row[metric] for name, row in summary.items() if metric in row}
    table.caption = "\n".join([
        "last update's rewards and held-out greedy evaluation after training; mean +- 95% CI over seeds",
        *difference_lines(learners, metric),
        incidental_line(),
    ])
    return table
