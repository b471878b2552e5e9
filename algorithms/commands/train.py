"""``deliberate train [meta|text]``: train one learner, then print its held-out results and
the files it wrote.

- ``deliberate train`` (``train meta``): a meta-policy learner on the meta-action env
  (:class:`algorithms.meta.train.TrainConfig`; ``--algo softrankpo|grpo|magrpo|sft``).
- ``deliberate train text [magrpo|grpo|softrankpo]``: the LLMs' weights on the text-action
  env (:func:`algorithms.text.train`; the learner's config fields are the options).

Every run writes to a folder of its own, ``runs/train/<family>-<algo>-seed<seed>-<time>``,
unless ``--run-dir`` names one; a folder that holds a run is continued only with
``--resume``, and only with the settings it was started with
(:mod:`algorithms.core.run_dirs`), checked before anything is written.

``train text`` runs unchanged under ``torchrun`` (``torchrun --nproc-per-node 8 -m
algorithms.cli train text ...``): the processes train data-parallel
(:mod:`algorithms.core.data_parallel`), rank 0 alone names and writes the folder and
prints. Under ``torchrun --max-restarts K`` (which needs ``--run-dir``), restarted workers
continue the run from its last checkpoint, as ``--resume`` would.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import tyro

from algorithms.commands.common import (
    RESOLVED_FIELDS,
    check_loggers,
    console,
    quiet_libraries,
    resolved_placement,
    wrote_folder,
)
from algorithms.core.run_dirs import CONFIG, failed_start, holds_run, new_run_dir, open_run_dir
from algorithms.meta.config import TrainConfig
from algorithms.text.config import (
    TEXT_CONFIGS,
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPOConfig,
    TextSoftRankPOConfig,
)

if TYPE_CHECKING:
    from rich.table import Table

TextLearner = (
    Annotated[TextMAGRPOConfig, tyro.conf.subcommand("magrpo")]
    | Annotated[TextGRPOConfig, tyro.conf.subcommand("grpo")]
    | Annotated[TextSoftRankPOConfig, tyro.conf.subcommand("softrankpo")]
)
"""The LLM-weight learners, each a subcommand whose options are its config's fields."""
TEXT_CURVES_FILE = "learning_curves.png"
"""The figure ``train text`` and ``compare text`` write in their folder: the joint reward per
update, held-out evaluations as points (:func:`algorithms.text.plots.learning_curves`)."""
TEXT_ALGOS = {cls: name for name, cls in TEXT_CONFIGS.items()}
"""Each text learner config's algorithm name (as ``deliberate train text NAME`` spells it)."""


@dataclass
class TextTrain:
    """Train the LLMs themselves on the text-action env (one LoRA adapter per agent by
    default): ``deliberate train text [magrpo|grpo|softrankpo] --model ... --updates ...``."""

    learner: Annotated[TextLearner, tyro.conf.arg(name="")] = field(default_factory=TextMAGRPOConfig)
    """The learner and its settings (default: MAGRPO)."""
    resume: bool = False
    """Continue the run in ``--run-dir`` from its checkpoint (the same settings, but the
    number of updates, evaluation and logging)."""


def check_run_dir_for(resume: bool, run_dir: str | None) -> None:
    """``--resume`` names a folder that holds a run (a ValueError saying what is missing)."""
    if resume and not run_dir:
        raise ValueError("--resume continues the run in --run-dir: give its folder")
    if resume and failed_start(Path(run_dir)):
        raise ValueError(
            f"--resume: {run_dir} holds only the {CONFIG} of a start that failed, no run to continue: "
            "leave --resume out (the folder is reused)"
        )
    if resume and not holds_run(Path(run_dir)):
        raise ValueError(f"--resume: {run_dir} holds no run to continue (no {CONFIG}, checkpoint or metrics)")


def train_meta(cfg: TrainConfig) -> dict[str, float]:
    """``deliberate train``: train ``cfg.algo`` (:func:`algorithms.meta.train.train`), print
    the held-out evaluation before and after training and the files written; return the
    final held-out metrics."""
    from algorithms.meta.train import train

    check_loggers(cfg.tensorboard, cfg.wandb_project)
    check_run_dir_for(cfg.resume, cfg.run_dir)
    if not cfg.run_dir:
        cfg = dataclasses.replace(cfg, run_dir=str(new_run_dir("train", "meta", f"{cfg.algo}-seed{cfg.seed}")))
    started = time.perf_counter()
    final = train(cfg)
    folder = Path(cfg.run_dir)
    console.print(meta_train_table(cfg, folder))
    wrote_folder(folder, time.perf_counter() - started)
    return final


def meta_train_table(cfg: TrainConfig, folder: Path) -> Table:
    """The held-out evaluations of a run in ``folder``: its first (the policy it started
    from: untrained, or the SFT warm start) and its last, consensus accuracy with a 95% confidence interval over
    the held-out problems."""
    from rich.table import Table

    from algorithms.core.metrics import METRICS, read_metrics

    evaluations = [record for record in read_metrics(folder / METRICS) if "eval/accuracy" in record]
    table = Table(title=f"{cfg.algo}, seed {cfg.seed}: held-out, {cfg.eval_problems} test problems")
    for column in ("policy", "updates", "episodes", "consensus acc (95% CI)", "acc", "tok/problem",
                   "PERSIST", "REFINE", "CONCEDE"):  # fmt: skip
        table.add_column(column, justify="left" if column == "policy" else "right")
    warm = cfg.algo != "sft" and bool(cfg.warm_start or cfg.sft_updates)
    for label, record in (("SFT warm start" if warm else "untrained", evaluations[0]), (cfg.algo, evaluations[-1])):
        table.add_row(
            label, str(record["step"]), f"{record['episodes']:,}",
            with_interval(record["eval/consensus_accuracy"], cfg.eval_problems),
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


def train_text(cfg: TextTrain) -> dict[str, Any]:
    """``deliberate train text``: train with :func:`algorithms.text.train`; print the last
    update's rewards, the held-out evaluation and the files written; return the final metrics."""
    from algorithms import text as text_learners
    from deliberation_env.text.config import config_record

    config = cfg.learner
    algo = TEXT_ALGOS[type(config)]
    quiet_libraries(config.run.progress)
    check_loggers(config.run.tensorboard, config.run.wandb_project)
    resume = cfg.resume or restarted_run(config.run.run_dir)
    check_run_dir_for(resume, config.run.run_dir)
    placement = resolved_placement(config.device, config.dtype)
    from algorithms.core import data_parallel  # torch: imported when a run starts, not for --help

    with data_parallel.process_group(config.device) as ranks:
        if config.run.run_dir is None:  # --run-dir "" names no folder
            run_dir = str(new_run_dir("train", "text", f"{algo}-seed{config.seed}")) if ranks.writes else ""
            config = dataclasses.replace(config, run=dataclasses.replace(config.run, run_dir=data_parallel.broadcast_object(run_dir)))
        if ranks.writes and config.run.run_dir:
            record = {"algo": algo, **config_record(config), **placement}
            open_run_dir(config.run.run_dir, record, resume, (*TextLearnerConfig.RUN_FIELDS, *RESOLVED_FIELDS))
        data_parallel.barrier()  # the others start once rank 0 has checked and recorded the folder
        started = time.perf_counter()
        result = text_learners.train(config)
    final = result.history[-1] if result.history else {}
    if ranks.writes:  # rank 0 alone draws, prints and writes
        if result.history and config.run.run_dir:
            from algorithms.text.plots import learning_curves

            title = f"{algo}, {config.env.task}, seed {config.seed}: joint reward per update"
            learning_curves({algo: [result.history]}, Path(config.run.run_dir) / TEXT_CURVES_FILE, title)
        console.print(text_train_table(type(result.learner).__name__, final, result.before, result.after))
        if config.run.run_dir:
            wrote_folder(Path(config.run.run_dir), time.perf_counter() - started)
    return {**final, **{f"after/{k}": v for k, v in result.after.items()}}


def restarted_run(run_dir: str | None) -> bool:
    """Whether this process is a worker ``torchrun`` restarted (``--max-restarts``) after one
    failed, with ``run_dir`` holding the run: it then continues the run from its last
    checkpoint, as with ``--resume`` (the same settings are checked).

    Raises:
        ValueError: Under ``torchrun --max-restarts`` > 0 without ``--run-dir`` (a restarted
            worker would start over in a new folder).
    """
    from algorithms.core import data_parallel

    if data_parallel.may_restart() and not run_dir:
        raise ValueError("torchrun --max-restarts continues a failed run from its folder: give --run-dir")
    return data_parallel.restarted() and holds_run(Path(run_dir))


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
