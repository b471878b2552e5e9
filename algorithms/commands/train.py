"""``deliberate train {meta,text} ALGO``: train one learner, then print its held-out results
and the files it wrote.

- ``deliberate train meta softrankpo|grpo|magrpo|sft``: a meta-policy learner on the
  meta-action env (:func:`algorithms.meta.train.train`).
- ``deliberate train text magrpo|grpo|softrankpo``: the LLMs' weights on the text-action
  env (:func:`algorithms.text.train`).

Both take the learner's config as their options, unprefixed: its ``env`` (``--task``,
``--team``), its ``run`` (``--updates``, ``--run-dir``, ``--resume``, ``--eval-interval``)
and its own fields (``--kl-coef``). The library's ``train`` owns the run folder (a new
one, ``runs/train/<family>-<algo>-seed<seed>-<time>``, unless ``--run-dir`` names one;
``--resume`` and the settings checked before anything is written); this module only
prints.

``train text`` runs unchanged under ``torchrun`` (``torchrun --nproc-per-node 8 -m
algorithms.cli train text ...``): the processes train data-parallel
(:mod:`algorithms.core.data_parallel`), rank 0 alone names and writes the folder and
prints. Under ``torchrun --max-restarts K`` (which needs ``--run-dir``), restarted workers
continue the run from its last checkpoint, as ``--resume`` would.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import tyro

from algorithms.commands.common import console, quiet_libraries, wrote_folder
from algorithms.core.run_dirs import check_resume, named_run
from algorithms.meta.config import (
    GRPOConfig,
    LearnerConfig,
    MAGRPOConfig,
    SFTConfig,
    SoftRankPOConfig,
    algo_of,
)
from algorithms.text.config import TextGRPOConfig, TextMAGRPOConfig, TextSoftRankPOConfig

if TYPE_CHECKING:
    from rich.table import Table

MetaLearners = (
    Annotated[SoftRankPOConfig, tyro.conf.subcommand("softrankpo")]
    | Annotated[GRPOConfig, tyro.conf.subcommand("grpo")]
    | Annotated[MAGRPOConfig, tyro.conf.subcommand("magrpo")]
    | Annotated[SFTConfig, tyro.conf.subcommand("sft")]
)
"""The meta-policy learners, each a subcommand whose options are its config's fields."""
TextLearners = (
    Annotated[TextMAGRPOConfig, tyro.conf.subcommand("magrpo")]
    | Annotated[TextGRPOConfig, tyro.conf.subcommand("grpo")]
    | Annotated[TextSoftRankPOConfig, tyro.conf.subcommand("softrankpo")]
)
"""The LLM-weight learners, each a subcommand whose options are its config's fields."""


@dataclass
class TrainMeta:
    """Train a meta-policy on the meta-action env: ``deliberate train meta
    softrankpo|grpo|magrpo|sft --updates ...``."""

    learner: Annotated[MetaLearners, tyro.conf.arg(name="")]
    """The learner and its settings."""


@dataclass
class TrainText:
    """Train the LLMs themselves on the text-action env (one LoRA adapter per agent by
    default): ``deliberate train text magrpo|grpo|softrankpo --model ... --updates ...``."""

    learner: Annotated[TextLearners, tyro.conf.arg(name="")]
    """The learner and its settings."""


def train_meta(cfg: TrainMeta) -> dict[str, float]:
    """``deliberate train meta ALGO``: train the learner (:func:`algorithms.meta.train.train`),
    print the held-out evaluation before and after training and the files written; return
    the final held-out metrics."""
    from algorithms.core.run_dirs import CONFIG
    from algorithms.meta.config import build_task
    from algorithms.meta.train import train

    config = cfg.learner
    check_resume(config.run.resume, config.run.run_dir)  # before a new folder is named for ""
    config = dataclasses.replace(config, run=named_run(config.run, "meta", f"{algo_of(config)}-seed{config.seed}"))
    started = time.perf_counter()
    result = train(config)
    folder = None if config.run.run_dir is None else Path(config.run.run_dir)
    if not result.before:
        console.print(f"trained {result.learner.update} updates; no held-out evaluation (--eval-problems 0)")
    else:  # the run's first and last evaluations (a resumed run's first from its log)
        problems = (
            json.loads((folder / CONFIG).read_text())["run"]["eval_problems"]  # at most the test split's
            if folder is not None
            else min(config.run.eval_problems, len(build_task(config.env).problems("test")))
        )
        first = {"step": 0, "episodes": 0, **result.before}
        last = {"step": result.learner.update, "episodes": result.learner.episodes, **result.after}
        console.print(meta_train_table(config, first, last, problems))
    if folder is not None:
        wrote_folder(folder, time.perf_counter() - started)
    return result.after


def meta_train_table(cfg: LearnerConfig, first: dict[str, float], last: dict[str, float], problems: int) -> Table:
    """A run's ``first`` held-out evaluation (the policy it started from: untrained, or the
    SFT warm start) and its ``last``, consensus accuracy with a 95% confidence interval
    over the ``problems`` held-out problems."""
    from rich.table import Table

    algo = algo_of(cfg)
    table = Table(title=f"{algo}, seed {cfg.seed}: held-out, {problems} test problems")
    for column in ("policy", "updates", "episodes", "consensus acc (95% CI)", "acc", "tok/problem",
                   "PERSIST", "REFINE", "CONCEDE"):  # fmt: skip
        table.add_column(column, justify="left" if column == "policy" else "right")
    warm = bool(getattr(cfg, "warm_start", "") or getattr(cfg, "sft_updates", 0))
    for label, record in (("SFT warm start" if warm else "untrained", first), (algo, last)):
        table.add_row(
            label, str(record["step"]), f"{record['episodes']:,}",
            with_interval(record["eval/consensus_accuracy"], problems),
            f"{record['eval/accuracy']:.3f}", f"{record['eval/tokens']:,.0f}",
            *(f"{record[f'eval/{action}_share']:.2f}" for action in ("persist", "refine", "concede")),
        )  # fmt: skip
    table.caption = "consensus acc: the plurality answer's accuracy; acc: mean individual accuracy (greedy policy)"
    return table


def with_interval(accuracy: float, n: int) -> str:
    """``0.625 [0.43, 0.79]``: an accuracy over ``n`` problems with its 95% Wilson interval.

    >>> with_interval(0.5, 20)
    '0.500 [0.30, 0.70]'
    """
    from scipy.stats import binomtest

    low, high = binomtest(round(accuracy * n), n).proportion_ci(method="wilson")
    return f"{accuracy:.3f} [{low:.2f}, {high:.2f}]"


def train_text(cfg: TrainText) -> dict[str, Any]:
    """``deliberate train text ALGO``: train with :func:`algorithms.text.train`; print the last
    update's rewards, the held-out evaluation and the files written (rank 0); return the
    final metrics."""
    from algorithms import text as text_learners
    from algorithms.core import data_parallel

    config = cfg.learner
    quiet_libraries(config.run.progress)
    started = time.perf_counter()
    result = text_learners.train(config)
    final = result.history[-1] if result.history else {}
    if data_parallel.from_environment().writes:  # rank 0 alone prints (the group is gone by now)
        console.print(text_train_table(type(result.learner).__name__, final, result.before, result.after))
        if result.run_dir:
            wrote_folder(Path(result.run_dir), time.perf_counter() - started)
    return {**final, **{f"after/{k}": v for k, v in result.after.items()}}


def text_train_table(title: str, final: dict[str, float], before: dict[str, float], after: dict[str, float]) -> Table:
    """The last update's metrics and the held-out evaluation before and after training."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("rewards/joint/mean", "rewards/correct/mean", "rewards/format/mean"):
        if key in final:
            table.add_row(f"last update {key}", f"{final[key]:.3f}")
    for key, value in before.items():
        table.add_row(f"held-out {key}", f"{value:.3f} -> {after[key]:.3f}")
    return table
