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

A learner of one's own takes the learner's place by its import path, as in ``compare``
(``deliberate train text ./mine.py:RLOO --model tiny``; a ``.py`` file by its path or a
dotted module on ``sys.path``): it is imported and checked before anything is written
(:func:`imported_learner`), its config is built as a comparison builds it
(:func:`~algorithms.core.compare.config_of_own`: its ``config_class``, whose fields are
options, those of the shipped learner it derives from among them; else GRPO's config), and
it trains as ``train(config, learner=Mine)`` does from Python. Its runs record it by its
``name``; a config file may not name its import path (importing runs code), so resuming
from a run's ``config.json`` names it again: ``train text ./mine.py:RLOO --config
<run>/config.json --resume``.

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
from algorithms.core.compare import (
    LearnerFactory,
    check_takes_config,
    config_of_own,
    learner_label,
    user_learners,
)
from algorithms.core.run_dirs import check_resume, named_run
from algorithms.meta.config import (
    CONFIGS,
    POLICY_GRADIENT_CONFIGS,
    GRPOConfig,
    LearnerConfig,
    MAGRPOConfig,
    PolicyGradientConfig,
    SFTConfig,
    SoftRankPOConfig,
    algo_of,
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


LEARNERS = {"meta": MetaLearners, "text": TextLearners}
"""Each family's shipped learners, the subcommands of ``train FAMILY``."""
OWN_CONFIGS = {
    "meta": (POLICY_GRADIENT_CONFIGS, PolicyGradientConfig),
    "text": (TEXT_CONFIGS, TextLearnerConfig),
}
"""Per family, the shipped learners' configs a learner of one's own may derive its config
from and the class of the settings they share (:func:`~algorithms.core.compare.config_of_own`)."""


@dataclass
class TrainMeta:
    """Train a meta-policy on the meta-action env: ``deliberate train meta
    softrankpo|grpo|magrpo|sft --updates ...``, or a learner of your own by import path in
    the learner's place, ``deliberate train meta ./mine.py:Mine --updates ...``."""

    learner: Annotated[MetaLearners, tyro.conf.arg(name="")]
    """The learner and its settings; one of your own by its import path in the learner's place,
    ``./mine.py:Mine`` (its options: ``deliberate train FAMILY ./mine.py:Mine --help``)."""
    own_learner: tyro.conf.Suppress[LearnerFactory | None] = None
    """A learner of one's own, built as the shipped ones are (:func:`imported_learner`
    imports it from the command line's import path); None: the shipped learner of
    ``learner``'s config."""


@dataclass
class TrainText:
    """Train the LLMs themselves on the text-action env (one LoRA adapter per agent by
    default): ``deliberate train text magrpo|grpo|softrankpo --model ... --updates ...``, or
    a learner of your own by import path in the learner's place, ``deliberate train text
    ./mine.py:RLOO --model ...`` (its config's own fields are options too)."""

    learner: Annotated[TextLearners, tyro.conf.arg(name="")]
    """The learner and its settings; one of your own by its import path in the learner's place,
    ``./mine.py:Mine`` (its options: ``deliberate train FAMILY ./mine.py:Mine --help``)."""
    own_learner: tyro.conf.Suppress[LearnerFactory | None] = None
    """A learner of one's own, built as the shipped ones are (:func:`imported_learner`
    imports it from the command line's import path); None: the shipped learner of
    ``learner``'s config."""


@dataclass(frozen=True)
class OwnLearner:
    """A learner of one's own that ``train FAMILY PATH`` trains.

    Attributes:
        path: Its import path, as the command line gives it (``./mine.py:RLOO``).
        factory: What it imports to: builds the learner as the family's shipped classes are built.
        config: The config class its settings are parsed into (:func:`~algorithms.core.compare.config_of_own`).
        name: The name its runs are recorded by (``algo`` in ``config.json``).
    """

    path: str
    factory: LearnerFactory
    config: type
    name: str


def imported_learner(path: str, family: str) -> OwnLearner:
    """The learner of one's own at the import path ``path`` (this imports its module, which
    runs its code), checked as ``compare FAMILY`` checks one, and the config class it takes.

    Raises:
        ValueError: On a path that does not import, a learner ``family``'s ``train`` cannot
            build, or one named as a shipped learner (its runs' ``config.json`` would name
            that one, which ``--config <run>/config.json --resume`` would then train).
        TypeError: On no learner class of ``family``, or one whose ``config_class`` is no
            config the family can build.
    """
    configs, template = OWN_CONFIGS[family]
    shipped = tuple(configs) if family == "text" else tuple(CONFIGS)
    factory = user_learners([path], shipped, None, family, command="train")[learner_label(path)]
    config, _ = config_of_own(factory, configs, template)
    check_takes_config(path, factory, config, f"train {family}")
    name = getattr(factory, "name", None)
    if not isinstance(name, str) or name in shipped:
        raise ValueError(
            f"learner {path!r} is named {name!r}, not a name of its own: its runs would be recorded as that "
            f"learner's (a shipped one's name, or none), and resumed as it from their config.json; give the class "
            f"a name other than {', '.join(shipped)} (name = 'mine')"
        )
    return OwnLearner(path, factory, config, name)


def train_meta(cfg: TrainMeta) -> dict[str, float]:
    """``deliberate train meta ALGO``: train the learner (:func:`algorithms.meta.train.train`),
    print the held-out evaluation before and after training and the files written; return
    the final held-out metrics."""
    from algorithms.core.run_dirs import CONFIG
    from algorithms.meta.config import build_task
    from algorithms.meta.train import train

    config = cfg.learner
    algo = algo_of(config) if cfg.own_learner is None else (getattr(cfg.own_learner, "name", None) or algo_of(config))
    check_resume(config.run.resume, config.run.run_dir)  # before a new folder is named for ""
    config = dataclasses.replace(config, run=named_run(config.run, "meta", f"{algo}-seed{config.seed}"))
    started = time.perf_counter()
    result = train(config, learner=cfg.own_learner)
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
        console.print(meta_train_table(config, algo, first, last, problems))
    if folder is not None:
        wrote_folder(folder, time.perf_counter() - started)
    return result.after


def meta_train_table(cfg: LearnerConfig, algo: str, first: dict[str, float], last: dict[str, float], problems: int) -> Table:
    """A run's ``first`` held-out evaluation (the policy it started from: untrained, or the
    SFT warm start) and its ``last``, consensus accuracy with a 95% confidence interval
    over the ``problems`` held-out problems; ``algo``: the learner's name."""
    from rich.table import Table

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
    result = text_learners.train(config, learner=cfg.own_learner)
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
