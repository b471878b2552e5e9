"""The ``deliberate`` command line: its grammar, and the entry that hands the arguments to
tyro once and runs the command chosen (:mod:`algorithms.commands`, one module per command).

.. code-block:: text

    deliberate run [meta|text] ...                      fixed protocols with a team (the main job)
    deliberate train {meta,text} ALGO|PATH ...          one learner (PATH: one of your own, ./mine.py:Mine)
    deliberate evaluate {meta,text} --run-dir RUN ...   a trained run's checkpoint on held-out problems
    deliberate compare {meta,text} ...                  learners x seeds on the same env and budget
    deliberate tasks list | show NAME
    deliberate cache stats | clear | merge OUT IN [IN ...] [--trust]

The family is a subcommand: ``meta`` (the meta-action env; ``deliberate run`` alone is the
main job, ``run meta``) or ``text`` (the text-action env). Both families' learners take the
same shape of options, none prefixed: the env's (``--task``, ``--team``), the run's
(``--updates``, ``--run-dir``, ``--eval-interval``) and the learner's own (``--kl-coef``);
``--env-workers`` are the Ray workers of the env, ``--rollout-workers`` those that sample
the text learners' completions. Lists are separated by spaces (``--algos softrankpo grpo``).
A learner of one's own is given by import path where a learner's name goes, in ``train``
(``train text ./mine.py:RLOO``: :func:`own_learner`, whose config's fields are its options)
as in ``compare`` (``--algos grpo ./mine.py:RLOO``); a config file names shipped learners
only, as importing would run code.
``--config FILE`` starts from a YAML or JSON file (``examples/configs/``) whose values the
options given override: it is read first (the only option read before the grammar) and its
values are the defaults of the one parse of the command line.

A mistake on the command line or in a data or config file prints one line,
``deliberate <command>: error: ...``, and exits with status 2 (``--debug`` shows the
traceback); the package's warnings print as one line too. The commands import torch and
the models only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import tyro
from rich.logging import RichHandler
from tyro.constructors import ConstructorRegistry, StructConstructorSpec, StructTypeInfo

from agents.base import ServerError
from agents.cache import CacheFileError, CacheMissError
from algorithms.commands import cache, compare, evaluate_meta, evaluate_text, run, tasks, train
from algorithms.commands.common import console
from algorithms.commands.records import RUN_MARKS, in_its_run_folder, settings_of_run
from algorithms.core import config_files, run_dirs
from algorithms.core.compare import PER_RUN
from algorithms.core.config import RunConfig
from algorithms.core.help_text import readable_help
from algorithms.meta.config import CONFIGS as META_CONFIGS
from algorithms.meta.config import CompareConfig, PolicyGradientConfig
from algorithms.text.config import MACHINE_RECORDS, TEXT_CONFIGS, TextLearnerConfig
from deliberation_env.meta.config import EnvConfig
from deliberation_env.text.config import is_import_path


# ---------------------------------------------------------------------------- the grammar
@dataclass
class Run:
    """Evaluate fixed protocols with a team: the heuristic baselines on the meta-action env
    (``run`` or ``run meta``: the main job) or the MAGRPO paper's coding baselines on the
    text-action env (``run text``)."""

    command: Annotated[
        Annotated[run.RunMeta, tyro.conf.subcommand("meta")]
        | Annotated[run.RunText, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ] = field(default_factory=run.RunMeta)
    config: Path | None = None
    """A YAML or JSON file (``examples/configs/``) whose values start the command; the
    options given override them. It maps the command's fields by their Python names,
    nested as its config nests them (``env: {task: gsm8k, path: data/gsm8k}``,
    ``n_problems: 100``); a first line ``command: run`` (or ``run text``) is optional and,
    if given, must name this command."""


@dataclass
class Train:
    """Train one learner: a meta-policy (``train meta softrankpo|grpo|magrpo|sft``) or the
    LLMs' weights (``train text magrpo|grpo|softrankpo``), or one of your own by import path
    in the learner's place (``train text ./mine.py:RLOO``); held-out results, metrics,
    checkpoints, in a folder of the run's own (``--run-dir`` names one, ``--resume`` continues it)."""

    command: Annotated[
        Annotated[train.TrainMeta, tyro.conf.subcommand("meta")]
        | Annotated[train.TrainText, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ]
    config: Path | None = None
    """A YAML or JSON file (``examples/configs/``) whose values start the command; the
    options given override them. It maps the learner config's fields by their Python names,
    nested as the config nests them, the same for both families: ``env: {task: gsm8k,
    path: data/gsm8k}``, ``run: {updates: 50}``, the learner's own fields (``kl_coef: 0.1``);
    ``algo: grpo`` names the learner when the command line does not (a learner of your own is
    named by its import path on the command line only: a file may not import code); a first
    line ``command: train meta`` (or ``train text``) is optional and, if given, must name this command."""


@dataclass
class Evaluate:
    """Evaluate a trained run's newest checkpoint on held-out problems, greedily and strictly as
    its own held-out evaluations: a meta-policy (``evaluate meta --run-dir RUN --eval-problems
    N``) or the LLMs' weights (``evaluate text --run-dir RUN --eval-problems N``); a table, and
    a JSON file in the run's ``evaluations/``."""

    command: Annotated[
        Annotated[evaluate_meta.EvaluateMeta, tyro.conf.subcommand("meta")]
        | Annotated[evaluate_text.EvaluateText, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ]


@dataclass
class Compare:
    """Compare learners over seeds on the same env, problems and budget: the meta-policy
    learners and the baselines (``compare meta``) or the LLM-weight learners
    (``compare text``); a table with 95% confidence intervals, CSV/JSON files and plots."""

    command: Annotated[
        Annotated[CompareConfig, tyro.conf.subcommand("meta")]
        | Annotated[compare.TextCompare, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ]
    config: Path | None = None
    """A YAML or JSON file (``examples/configs/``) whose values start the command; the
    options given override them. It maps the comparison's fields by their Python names:
    ``seeds: 3``, ``algos: [grpo, magrpo]``, ``learner: {env: {task: arithmetic}, run:
    {updates: 50}}`` (the template every learner shares); a first line ``command: compare
    meta`` (or ``compare text``) is optional and, if given, must name this command."""


@dataclass
class Tasks:
    """Inspect the built-in tasks."""

    command: Annotated[
        Annotated[tasks.TasksList, tyro.conf.subcommand("list")]
        | Annotated[tasks.TasksShow, tyro.conf.subcommand("show")],
        tyro.conf.arg(name=""),
    ]


@dataclass
class Cache:
    """Inspect, clear or merge SQLite response caches."""

    command: Annotated[
        Annotated[cache.CacheStats, tyro.conf.subcommand("stats")]
        | Annotated[cache.CacheClear, tyro.conf.subcommand("clear")]
        | Annotated[cache.CacheMerge, tyro.conf.subcommand("merge")],
        tyro.conf.arg(name=""),
    ]


@dataclass
class Deliberate:
    """Teams of LLM agents that learn how to deliberate: evaluate, train and compare on
    the deliberation envs (``deliberate COMMAND --help`` for a command's options)."""

    command: Annotated[
        Annotated[Run, tyro.conf.subcommand("run")]
        | Annotated[Train, tyro.conf.subcommand("train")]
        | Annotated[Evaluate, tyro.conf.subcommand("evaluate")]
        | Annotated[Compare, tyro.conf.subcommand("compare")]
        | Annotated[Tasks, tyro.conf.subcommand("tasks")]
        | Annotated[Cache, tyro.conf.subcommand("cache")],
        tyro.conf.arg(name=""),
    ]
    debug: bool = False
    """Show the traceback of an error (for a bug report) instead of its one line."""


COMMANDS: dict[type, tuple[str, Any]] = {
    run.RunMeta: ("run meta", run.run_meta),
    run.RunText: ("run text", run.run_text),
    train.TrainMeta: ("train meta", train.train_meta),
    train.TrainText: ("train text", train.train_text),
    evaluate_meta.EvaluateMeta: ("evaluate meta", evaluate_meta.evaluate_meta),
    evaluate_text.EvaluateText: ("evaluate text", evaluate_text.evaluate_text),
    CompareConfig: ("compare meta", compare.compare_meta),
    compare.TextCompare: ("compare text", compare.compare_text),
    tasks.TasksList: ("tasks list", tasks.list_tasks),
    tasks.TasksShow: ("tasks show", tasks.show_task),
    cache.CacheStats: ("cache stats", cache.cache_stats),
    cache.CacheClear: ("cache clear", cache.cache_clear),
    cache.CacheMerge: ("cache merge", cache.cache_merge),
}
"""Each command's config class: its name on the command line and the function that runs it."""
MARKERS = (tyro.conf.OmitSubcommandPrefixes, tyro.conf.CascadeSubcommandArgs)
"""Subcommands without their field's prefix (``train text``) and options that may follow any
subcommand below the one they belong to."""
PER_RUN_FIELDS = {
    "meta": {PolicyGradientConfig: "seed", RunConfig: "run_dir", EnvConfig: "reward_scale"},
    "text": {TextLearnerConfig: "seed", RunConfig: "run_dir"},
}
"""The fields of each family's comparison template that ``compare`` sets for each run, by
the config class that holds them: no options of ``compare`` (:data:`PER_RUN` names the one
that says them instead: ``--seeds`` for ``--seed``)."""


def without_per_run_options() -> ConstructorRegistry:
    """A tyro registry that builds the classes of :data:`PER_RUN_FIELDS` with those fields
    suppressed (no option, no help: the field keeps its default, or a config file's value,
    which the comparison then refuses). Used for ``compare`` command lines alone: ``train``
    has these options."""
    hidden: dict[type, set[str]] = {}
    for fields in PER_RUN_FIELDS.values():
        for kind, name in fields.items():
            hidden.setdefault(kind, set()).add(name)
    registry = ConstructorRegistry()
    building: set[type] = set()  # the classes whose spec tyro's own rules are building

    @registry.struct_rule
    def suppress_per_run_fields(info: StructTypeInfo) -> Any:
        """The spec tyro's own rules build for a class of ``hidden``, those fields suppressed;
        None for another class (or while tyro's own rules build it)."""
        names = hidden.get(info.type)
        if names is None or info.type in building:
            return None
        building.add(info.type)
        try:
            spec = ConstructorRegistry.get_struct_spec(info)
        finally:
            building.discard(info.type)
        if not isinstance(spec, StructConstructorSpec):
            return spec
        fields = tuple(
            replace(spec_field, type=Annotated[spec_field.type, tyro.conf.Suppress]) if spec_field.name in names
            else spec_field
            for spec_field in spec.fields
        )  # fmt: skip
        return replace(spec, fields=fields)

    return registry


COMPARE_REGISTRY = without_per_run_options()
"""The registry of ``compare`` command lines: their help lists no per-run option."""


def own_learner(args: list[str]) -> train.OwnLearner | None:
    """The learner of one's own that the ``train`` command line ``args`` names by import path
    in the learner's place (``train text ./mine.py:RLOO``), imported and checked
    (:func:`algorithms.commands.train.imported_learner`); None where it names none."""
    words = line_words(args)
    if words[:1] != ["train"] or len(words) != 2 or words[1] not in ALGOS or len(args) < 3 or not is_import_path(args[2]):
        return None
    return train.imported_learner(args[2], words[1])


def misplaced_learner(args: list[str]) -> str | None:
    """Where a ``train FAMILY`` command line that tyro refused names its learner (a shipped
    learner's name, or one's own by import path) after options, not right after the family
    (tyro reads a subcommand only there): one line saying where it goes; None otherwise. A
    word right after an option is taken for that option's value (``--protocol ./x.py:protocol``).

    >>> misplaced_learner(["train", "text", "--model", "tiny", "./mine.py:RLOO"])
    'name the learner right after the family: deliberate train text ./mine.py:RLOO --model tiny'
    >>> misplaced_learner(["train", "text", "--protocol", "./x.py:protocol"]) is None
    True
    """
    if line_words(args)[:1] != ["train"] or len(args) < 3 or args[1] not in ALGOS or not args[2].startswith("-"):
        return None
    rest = args[2:]
    for k, word in enumerate(rest):
        if k and not rest[k - 1].startswith("-") and (word in ALGOS[args[1]] or is_import_path(word)):
            others = " ".join(rest[:k] + rest[k + 1 :])
            return f"name the learner right after the family: deliberate train {args[1]} {word} {others}"
    return None


def with_own_learner(own: train.OwnLearner, family: str) -> ConstructorRegistry:
    """A tyro registry for ``train FAMILY PATH``: the family's learner subcommands with
    ``own``'s import path first (so that a config file's learner of ``own.config``'s class is
    its default, not the shipped learner's that it derives from), whose options are the
    fields of ``own.config``; and ``own.factory`` the command's ``own_learner``."""
    kind = FAMILIES["train"][family]
    learners = Annotated[
        Annotated[own.config, tyro.conf.subcommand(own.path)] | train.LEARNERS[family], tyro.conf.arg(name="")
    ]
    registry = ConstructorRegistry()
    building: set[type] = set()  # while tyro's own rules build the spec

    @registry.struct_rule
    def with_own(info: StructTypeInfo) -> Any:
        """``kind``'s spec with ``own`` among its learners; None for another class."""
        if info.type is not kind or kind in building:
            return None
        building.add(kind)
        try:
            spec = ConstructorRegistry.get_struct_spec(info)
        finally:
            building.discard(kind)
        widened = {"learner": {"type": learners}, "own_learner": {"default": own.factory}}
        return replace(spec, fields=tuple(replace(item, **widened.get(item.name, {})) for item in spec.fields))

    return registry


# ---------------------------------------------------------------------------- errors
USER_ERRORS = (
    ValueError, TypeError, KeyError, FileNotFoundError, ImportError, CacheFileError, CacheMissError, ServerError,
)  # fmt: skip
"""What the package raises on a bad value, file, cache key, missing extra, an offline cache's miss or a model
server that refused or never answered (``openai:`` teams): one line, no traceback."""
LIST_FLAGS = (
    "--algos", "--reward-scales", "--baselines", "--policies", "--team", "--models", "--lora-targets",
    "--simulated.skill", "--simulated.refine-gain", "--simulated.self-fix", "--simulated.corruption",
)  # fmt: skip
"""Options that take a list, separated by spaces."""
ALGOS = {"meta": tuple(META_CONFIGS), "text": tuple(TEXT_CONFIGS)}
"""The learners of each family, by name (``deliberate train FAMILY ALGO``)."""
COMMAND_WORDS = frozenset(
    word for name, _ in COMMANDS.values() for word in name.split()
) | {word for names in ALGOS.values() for word in names}
"""The words of the command names (what the error line's ``deliberate <command>`` shows)."""


def check_per_run_options(args: list[str]) -> None:
    """Refuse, on a ``compare`` command line, an option of a setting that the comparison sets
    for each run (:data:`PER_RUN_FIELDS`), naming the option that says it instead.

    Raises:
        ValueError: ``compare sets --seed for each run: use --seeds (got --seed 3)``.
    """
    words = line_words(args)
    if words[:1] != ["compare"] or words[1:2] not in (["meta"], ["text"]):
        return
    names = {"--" + name.replace("_", "-"): name for name in PER_RUN_FIELDS[words[1]].values()}
    for k, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag in names:
            given = " ".join([flag, value] if equals else args[k : k + 2])
            raise ValueError(f"compare sets {flag} for each run: use {PER_RUN[names[flag]]} (got {given})")


CONFIG_FIELD = re.compile(r"\b[A-Z]\w*(?:Config|Settings)\.([a-z_]\w*)")
"""A config's field as a check names it from Python (``TextGRPOConfig.micro_batch_size``)."""


def as_flags(message: str) -> str:
    """``message`` with each config field it names (:data:`CONFIG_FIELD`) written as its flag,
    as the command line gives it.

    >>> as_flags("TextMAGRPOConfig.micro_batch_size must be > 0, got 0")
    '--micro-batch-size must be > 0, got 0'
    """
    return CONFIG_FIELD.sub(lambda match: "--" + match.group(1).replace("_", "-"), message)


def line_words(args: list[str]) -> list[str]:
    """The command words that ``args`` starts with (``["train", "text"]``)."""
    words = []
    for arg in args:
        if arg not in COMMAND_WORDS:
            break
        words.append(arg)
    return words


def command_name(args: list[str]) -> str:
    """``deliberate`` and the command words that ``args`` starts with (``deliberate train text``),
    and the process's rank under ``torchrun`` (``deliberate train text [rank 1]``)."""
    name = " ".join(["deliberate", *line_words(args)])
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # under torchrun every rank speaks: say which
        name += f" [rank {os.environ.get('RANK', '0')}]"
    return name


def check_lists(args: list[str]) -> None:
    """Refuse a comma-separated list, naming what to write instead."""
    for k, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        first = value if equals else " ".join(args[k + 1 : k + 2])  # the list's first value
        if flag in LIST_FLAGS and "," in first and not first.startswith("-"):
            spaced = " ".join(part for part in first.split(",") if part)
            raise ValueError(f"{flag} takes values separated by spaces, not commas: did you mean {flag} {spaced}?")


UNRECOGNIZED = re.compile(r"Unrecognized (?:or misplaced )?(?:options|arguments?):\s*(--[\w.-]+)")
"""tyro's line naming the first option that the command does not have."""
UNKNOWN_WORD = re.compile(r"Unrecognized (?:or misplaced )?(?:options|arguments?):\s*([^\s-]\S*).*?Available subcommands: ([\w, -]+?)(?: -{3,}| For full helptext|$)")
"""tyro's line naming a word that is no subcommand, and the subcommands there are."""
STRAY = re.compile(r"Unrecognized (?:or misplaced )?(?:options|arguments?):\s*([^\s-]\S*)")
"""tyro's line naming a word (no option) where the command takes options only."""
WITH_PATH = ("deliberate run", "deliberate train", "deliberate compare", "deliberate cache stats", "deliberate cache clear")
"""The commands that take a file or folder by ``--path`` (the task's data; the cache file)."""
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
"""The names of config files (``--config FILE``)."""
ELSEWHERE = re.compile(r"in (deliberate [\w ]+?) --help")
"""Where tyro's message says a similar option is (``in deliberate train meta grpo --help``)."""
OPTION = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9.-]*[a-z0-9])")
"""An option as tyro's message lists them."""
MISSING = re.compile(r"Missing subcommand\W*Expected one of \{([^}]*)\}")
"""tyro's line on a command line that stops before its subcommand (``train meta``)."""
REFUSED = re.compile(r"Error parsing ([\w.-]+): (.*?)(?: -{3,}| Argument helptext| For full helptext|$)")
"""tyro's line naming a value that a config's own check or the option's type refused, and why."""
NOT_A_NUMBER = re.compile(r"(invalid literal for int\(\) with base 10|could not convert string to float): ('.*')")
"""Python's message on a value that is no number."""
CHOICE = re.compile(r"invalid choice '(.*?)' for argument '(--[\w.-]+)'\. Expected one of \(([^)]*)\)")
"""tyro's line naming a value that is none of an option's choices."""


def unboxed(printed: str) -> str:
    """tyro's error box ``printed`` as one line of text, without its frame."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", printed).split())


def options_of(listed: str, command: str) -> list[str]:
    """The options of ``command`` (``deliberate train text grpo``) among those tyro ``listed``
    as similar, each followed by the commands that have it (``--env-workers INT ... in
    deliberate train meta grpo --help``): a real client was offered another command's."""
    # An entry starts at an option, not at the "--help" that ends its "in deliberate ... --help";
    # a flag's entry at both its forms ("--gradient-checkpointing, --no-gradient-checkpointing
    # Recompute ..."), so a misspelt "--gradient-checkpoint" is offered the flag that turns
    # it on, not its --no- form (a real client was).
    option = r"--(?!help\b)[a-z0-9][a-z0-9.-]*"
    segments = re.split(rf"(?<![\w-])(?<!, )(?={option}(?:, {option})? [A-Z{{\[])", listed)
    return [
        name
        for segment in segments
        if segment.startswith("--") and command and command in ELSEWHERE.findall(segment)
        for name in re.match(rf"({option})(?:, ({option}))?", segment).groups()
        if name
    ]


TRL_OPTIONS = {
    "--num-generations": "--group-size",
    "--num-iterations": "--update-epochs",
    "--steps-per-generation": "--num-minibatches (optimizer steps per batch)",
    "--per-device-train-batch-size": "--micro-batch-size",
    "--gradient-accumulation-steps": (
        "--groups-per-update x --group-size (an update's batch, accumulated over micro-batches of --micro-batch-size "
        "sequences: the whole batch's gradient, exactly)"
    ),
    "--loss-type": "--aggregation (grpo: sequence, dapo and bnpo: token, dr_grpo: constant)",
    "--epsilon": "--clip-eps",
    "--epsilon-high": "--clip-eps-high",
    "--importance-sampling-level": "--importance-sampling",
    "--beta": "--kl-coef",
    "--max-completion-length": "--max-new-tokens",
    "--lr-scheduler-type": "--lr-schedule",
    "--warmup-steps": "--warmup-updates",
    "--max-steps": "--updates",
    "--save-steps": "--checkpoint-interval",
    "--save-total-limit": "--keep-checkpoints",
    "--output-dir": "--run-dir",
    "--model-name-or-path": "--model",
    "--bf16": "--dtype bfloat16",
    "--fp16": "--dtype float16",
    "--torch-dtype": "--dtype (auto, float32, bfloat16 or float16)",
    "--report-to": "--wandb-project NAME or --tensorboard (metrics.jsonl always)",
    "--warmup-ratio": "--warmup-updates (a number of updates)",
    "--num-train-epochs": "--updates (a number of updates, not of passes over the problems)",
    "--use-peft": "--finetune lora (the default)",
    "--num-completions-to-print": "--log-completions N (into the run folder's completions/update-NNNNNN.jsonl)",
    "--resume-from-checkpoint": "--resume (from the newest checkpoint) or --resume-from update-NNNNNN (a kept one)",
    "--use-vllm": (
        "--sampler torch, the default (no vLLM engine in training yet: it decodes the whole team in one "
        "mixed-adapter batch; on a GPU add --sample-batch-size 256 --eval-envs 128 --decoding compiled)"
    ),
    "--generation-batch-size": "--sample-batch-size (rows decoded together; an update's batch is --groups-per-update x --group-size)",
    "--cache-implementation": "--decoding static (a static KV cache) or --decoding compiled (the static step through torch.compile)",
    "--model-init-kwargs": "--dtype (attention runs through PyTorch's SDPA; the device is --device)",
}
"""TRL's ``GRPOConfig`` options that have another name here (the table of
:mod:`algorithms.text`): an unknown option that is one of them names ours."""
TRL_ABSENT = {
    "--max-prompt-length": "gone from TRL 1.x; an env's prompts are bounded by its task and turns",
    "--sync-ref-model": "TRL refuses it with PEFT; full fine-tuning's reference here is the base it started from",
    "--ref-model-sync-steps": "no reference sync here (--sync-ref-model)",
    "--ref-model-mixup-alpha": "no reference sync here (--sync-ref-model)",
    "--disable-dropout": "dropout is always off here (the models run in eval mode; LoRA's dropout is 0)",
    "--num-generations-eval": "the held-out evaluation is greedy, one completion per agent and problem (--eval-problems)",
    "--shuffle-dataset": "each update draws its problems at random from the seed (--seed)",
    "--reward-weights": "an env's reward is its protocol's (a FunctionProtocol's reward function weighs its parts)",
    "--multi-objective-aggregation": "an env's reward is its protocol's (a FunctionProtocol's reward function weighs its parts)",
    "--trust-remote-code": "models load with transformers' own classes only (no code from the hub runs)",
    "--entropy-coef": "no entropy bonus (losses/entropy is logged every update)",
    "--top-entropy-quantile": "every completion token is trained on (--mask-truncated-completions leaves out cut completions)",
    "--delta": "no upper bound on the ratio of negative advantages (--clip-eps, --clip-eps-high)",
    "--max-tool-calling-iterations": "no tool calls: an agent's action is its text",
}
TRL_ABSENT_PREFIXES = {
    "--vllm-": "no vLLM engine in training yet (--use-vllm): the torch sampler decodes the whole team in one mixed-adapter batch",
    "--sapo-": "TRL's loss types sapo and vespo are not here (its others are --aggregation's: --loss-type says which)",
    "--vespo-": "TRL's loss types sapo and vespo are not here (its others are --aggregation's: --loss-type says which)",
}
"""Prefixes of TRL's options without a counterpart here (``--vllm-mode``, ...), and why."""
"""TRL's ``GRPOConfig`` options that have no counterpart here, and why: an unknown option
that is one of them says so."""
COMLRL_FIELDS = {
    "num_agents": ("env.n_agents", ""),
    "num_turns": (
        "env.max_turns", " (CoMLRL's turns branch into a tree, here rollout tree: the default is parallel rollouts)"
    ),
    "termination_threshold": (
        "env.stop_threshold",
        (
            " (a joint sample's episode ends once its joint reward reaches it, that reward then counting at every "
            "turn left; CoMLRL stops a node's samples once their mean reward exceeds it)"
        ),
    ),
    "discount": ("gamma", " (CoMLRL's default is 0.9, ours 1.0)"),
    "joint_mode": ("pairing", " (aligned or cross, as CoMLRL's; cross for one turn, aligned with rollout tree)"),
    "advantage_mode": ("baseline", " (mean, rloo, max or raw; magrpo's own: in compare text, --magrpo.baseline)"),
    "advantage_normalization": (
        "normalize_advantages", " (magrpo's own, off by default: in compare text, --magrpo.normalize-advantages)"
    ),
    "eval_num_samples": ("run.eval_problems", " (held-out problems per evaluation)"),
    "eval_batch_size": ("eval_envs", " (held-out problems played at a time)"),
    "rollout_buffer_size": ("groups_per_update", " (problems per update)"),
    "train_batch_size": ("num_minibatches", " (optimizer steps per update: rollout_buffer_size / train_batch_size)"),
}
"""CoMLRL's ``MAGRPOConfig`` fields that have another name here, as ``(our field, a note)``
with the part a config file nests it under (``env.max_turns``): an unknown option or
config-file key that is one of them names ours (a CoMLRL user's ``--num-turns 2``).
``num_generations`` and ``num_train_epochs`` are TRL's names too (:data:`TRL_OPTIONS`);
``max_new_tokens``, ``temperature``, ``top_p``, ``top_k``, ``learning_rate`` and
``eval_interval`` are the same here (``eval_interval`` counts updates)."""
COMLRL_ABSENT = {
    "external_prompt_passthrough": (
        "a protocol builds every turn's prompt itself, with its feedback (a FunctionProtocol's prompt "
        "function receives the feedback function's text)"
    ),
    "logging_steps": "every update is logged, to metrics.jsonl",
}
"""CoMLRL's ``MAGRPOConfig`` fields that have no counterpart here, and why."""


def comlrl_hint(name: str, as_flag: bool, prefix: str = "") -> str | None:
    """What CoMLRL's field ``name`` (``num_turns``) is here, as a command line (``as_flag``:
    ``--max-turns``) or a config file names it, there under the parts ``prefix`` the file
    nests it in (``learner.``: the key ``learner.env.max_turns``); None when ``name`` is no
    CoMLRL field of :data:`COMLRL_FIELDS` or :data:`COMLRL_ABSENT`."""
    if name in COMLRL_ABSENT:
        return f"CoMLRL's, not here: {COMLRL_ABSENT[name]}"
    if name not in COMLRL_FIELDS:
        return None
    ours, note = COMLRL_FIELDS[name]
    part, _, field_name = ours.rpartition(".")
    if as_flag:
        return f"that is CoMLRL's name; here it is --{field_name.replace('_', '-')}{note}"
    if part and prefix.endswith(f"{part}."):  # already under its part (env: {num_turns: 2})
        prefix = prefix[: -len(part) - 1]
    return f"that is CoMLRL's name; here it is the key {prefix}{ours}{note}"


def check_comlrl_keys(data: Any, path: Path, prefix: str = "") -> None:
    """Refuse a config file's key that is CoMLRL's name (:data:`COMLRL_FIELDS`), at any
    depth, naming ours: no config of this package has a field of those names, so the
    file's loader would refuse it as unknown, naming only every field there is.

    Raises:
        ValueError: Naming the file, the key and what it is here.
    """
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        hint = comlrl_hint(str(key), as_flag=False, prefix=prefix)
        if hint is not None:
            raise ValueError(f"config file {path}: {prefix}{key}: {hint}")
        check_comlrl_keys(value, path, f"{prefix}{key}.")


NESTS = ("env", "run")
"""The parts of a config that a config file nests (``env: {task: gsm8k}``) and the command
line does not (``--task gsm8k``)."""
TEXT_ONLY_OPTIONS = ("--aggregation", "--importance-sampling", "--max-new-tokens", "--micro-batch-size", "--model",
                     "--dtype", "--finetune", "--log-completions")  # fmt: skip
"""The options named in :data:`TRL_OPTIONS` that the meta learners do not have (no LLM
weights): a hint that names one is not given on a meta command line."""


def short_error(printed: str, command: str = "") -> str | None:
    """One line for tyro's error message ``printed``: on an option the command does not have,
    ``unrecognized option --kl-coeff; did you mean --kl-coef?`` (the nearest of the options
    tyro lists as similar); on a missing subcommand, the ones to choose from; on a value that
    is none of an option's choices, the choices (``--dtype takes one of auto, ...``); on a
    value the option's type or a config's check refused, the option and why; None for another
    message (shown as tyro printed it)."""
    text = unboxed(printed)
    found = UNRECOGNIZED.search(text)
    if found is not None:
        flag = found.group(1)
        rest = text[found.end() :]
        ours = TRL_OPTIONS.get(flag, "")
        if ours and not (" meta" in command and set(ours.split()) & set(TEXT_ONLY_OPTIONS)):
            return f"unrecognized option {flag}: that is TRL's name; here it is {ours}"
        absent = TRL_ABSENT.get(flag) or next((why for start, why in TRL_ABSENT_PREFIXES.items() if flag.startswith(start)), None)
        if absent and " text" in command:
            return f"unrecognized option {flag}: TRL's, not here: {absent}"
        comlrl = comlrl_hint(flag[2:].replace("-", "_"), as_flag=True) if " text" in command else None
        if comlrl is not None:
            return f"unrecognized option {flag}: {comlrl}"
        nest, _, name = flag[2:].rpartition(".")
        if nest in NESTS:  # tyro's --env.task: the settings a config file nests
            return f"unrecognized option {flag}: options are flat here, --{name} (a config file nests it: {nest}: {{{name.replace('-', '_')}: ...}})"
        own = re.search(rf"{re.escape(flag)} [A-Z{{]", rest)  # the flag itself, listed as another command's
        if own is not None:
            entry = re.split(r"(?<![\w-])--(?!help\b)[a-z0-9]", rest[own.end() :], maxsplit=1)[0]
            commands = list(dict.fromkeys(ELSEWHERE.findall(entry)))
            words = command.split()
            if words[1:2] == ["compare"] and len(words) > 2:  # a learner's own setting: its compare option
                owners = [c.split()[-1] for c in commands if c.split()[1:3] == ["train", words[2]]]
                if owners:
                    options = " or ".join(f"--{owner}.{flag[2:]}" for owner in owners)
                    return f"{flag} is {' and '.join(owners)}'s own setting: in a comparison, give {options}"
            if commands:
                more = f" and {len(commands) - 3} more" if len(commands) > 3 else ""
                return f"{flag} is not an option of this command but of {', '.join(commands[:3])}{more}"
        candidates = sorted({option for option in OPTION.findall(rest) if option not in (flag, "--help")})
        own_options = options_of(rest, command)
        close = difflib.get_close_matches(flag, own_options or candidates, n=1, cutoff=0.5)
        return f"unrecognized option {flag}" + (f"; did you mean {close[0]}?" if close else "")
    word = UNKNOWN_WORD.search(text)
    if word is not None:
        choices = [choice.strip() for choice in word.group(2).split(",")]
        close = difflib.get_close_matches(word.group(1), choices, n=1, cutoff=0.5)
        if not close and ("/" in word.group(1) or word.group(1).endswith(CONFIG_SUFFIXES)):
            return stray_word(word.group(1), command)
        return f"unrecognized command {word.group(1)}" + (
            f"; did you mean {close[0]}?" if close else f"; name one of {', '.join(choices)}"
        )
    stray = STRAY.search(text)
    if stray is not None:
        return stray_word(stray.group(1), command)
    missing = MISSING.search(text)
    if missing is not None:
        return f"name one of {missing.group(1)} after the command"
    choice = CHOICE.search(text)
    if choice is not None:
        value, flag = choice.group(1), choice.group(2)
        choices = [option.strip(" '") for option in choice.group(3).split(",")]
        close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else ""
        return f"{flag} takes one of {', '.join(choices)}, not {value!r}{hint}"
    refused = REFUSED.search(text)
    if refused is None:
        return None
    where, why = refused.group(1), refused.group(2).strip()
    if not where.startswith("--"):
        return why
    kind = NOT_A_NUMBER.search(why)
    if kind is None:
        return f"{where}: {why}"
    return f"{where} takes {'an integer' if 'int()' in kind.group(1) else 'a number'}, not {kind.group(2)}"


def stray_word(word: str, command: str) -> str:
    """One line for ``word``, given where ``command`` takes options only: a config file is
    offered ``--config``, another path ``--path`` where the command has it (a new user
    wrote ``deliberate cache stats FILE`` and got tyro's box), a folder ``evaluate``'s
    ``--run-dir``."""
    command = command.removesuffix(f" {word}")  # a command word out of place: not part of the command
    if word.endswith(CONFIG_SUFFIXES) and command.startswith(tuple(f"deliberate {name}" for name in CONTAINERS)):
        return f"unexpected argument {word}; did you mean --config {word}?"
    if ("/" in word or "." in word) and command.startswith(WITH_PATH):
        return f"unexpected argument {word}; did you mean --path {word}?"
    if command.startswith("deliberate evaluate") and ("/" in word or Path(word).is_dir()):  # a run's folder
        return f"unexpected argument {word}; did you mean --run-dir {word}?"
    return f"unexpected argument {word}: {command} takes options only ({command} --help lists them)"


OWN_PACKAGES = ("deliberation_env", "agents", "algorithms")
"""This package's top-level modules."""


def show_warning(prog: str) -> Any:
    """A ``warnings.showwarning`` that prints ``<prog>: warning: <message>`` on one line, or
    ``<prog>: warning from <library>: <message>`` for another library's (a real client took
    transformers' "Unable to fetch remote file" for the package's), each line once (a config
    checked again where a command copies it warned twice); under ``torchrun``, by rank 0
    alone (every rank checks the same settings: a client's 16 GPUs would print each warning
    16 times; errors still print on every rank)."""
    shown: set[str] = set()

    def show(message: Warning | str, *_: Any, **__: Any) -> None:
        if os.environ.get("RANK", "0") != "0":
            return
        library = library_of(issuer_file())
        source = "" if library is None else f" from {library}"
        line = f"{prog}: warning{source}: {message}"  # not the file and line: the package's own
        if line not in shown:
            shown.add(line)
            print(line, file=sys.stderr)

    return show


def issuer_file() -> str:
    """The file of the code that called ``warnings.warn``: the first frame up the stack
    outside this module and ``warnings`` (a warning's own file and line are those its
    ``stacklevel`` names, often the caller's, so they cannot say whose warning it is)."""
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == __file__ or Path(frame.f_code.co_filename).name in ("warnings.py", "_py_warnings.py")
    ):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def library_of(filename: str) -> str | None:
    """The installed library whose file ``filename`` is (``transformers``), or None for this
    package's own files and files outside ``site-packages``."""
    parts = Path(filename).parts
    for k, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            name = parts[k + 1].removesuffix(".py")
            return None if name in OWN_PACKAGES else name
    return None


# ---------------------------------------------------------------------------- config files
CONTAINERS = {"run": Run, "train": Train, "compare": Compare}
"""The commands that take ``--config FILE``, by their first word."""
FAMILIES = {"train": {"meta": train.TrainMeta, "text": train.TrainText}}
"""The commands whose config is a learner's, by family: the file's learner is built as its class."""


def config_path(args: list[str]) -> Path | None:
    """The file of ``--config FILE`` (or ``--config=FILE``) in ``args``, the one option read
    before the grammar; None without one."""
    for k, arg in enumerate(args):
        if arg == "--config" and k + 1 < len(args):
            return Path(args[k + 1])
        if arg.startswith("--config="):
            return Path(arg.partition("=")[2])
    return None


def line_command(args: list[str]) -> tuple[str, str | None]:
    """The command the command line ``args`` names (``train meta``; ``run`` alone is
    ``run meta``) and the learner it names, if any (``grpo`` of ``train text grpo``)."""
    words = line_words(args)  # not command_name's: under torchrun it names the rank
    if words[:1] == ["run"] and words[1:2] not in (["meta"], ["text"]):
        words = ["run", "meta", *words[1:]]
    family = words[1] if len(words) > 1 else ""
    algo = next((word for word in words[2:] if word in ALGOS.get(family, ())), None)
    return " ".join(word for word in words if word != algo), algo


def names_command(written: str, named: str) -> bool:
    """Whether a config file's ``command: written`` names the command ``named``
    (``train meta``): the same words, a learner's name left out; ``run`` alone is
    ``run meta``, ``train`` or ``compare`` alone either family's."""
    words, _ = line_command(written.split())
    return words.split() == named.split()[: len(words.split())] and bool(words)


def read_config_file(path: Path, named: str) -> dict[str, Any]:
    """The fields of the config file ``path`` given to the command ``named`` (``train text``).
    Its ``command`` key is optional (the command line decides); if given, it must name that
    command (``train`` for any ``train FAMILY``).

    Raises:
        ValueError: Naming the file, when ``named`` takes no config file or the file's
            ``command`` names another command.
    """
    if not named or named.split()[0] not in CONTAINERS or len(named.split()) < 2:
        raise ValueError("--config FILE follows the command it starts: deliberate run|train|compare meta|text [ALGO] --config FILE")
    data = config_files.read(path)
    written = data.pop("command", None)
    if written is not None and not names_command(str(written), named):
        raise ValueError(
            f"config file {path} is for 'deliberate {written}', not 'deliberate {named}': "
            f"give it to 'deliberate {written}', or change or leave out its command: key"
        )
    return data


def run_record(path: Path, data: dict[str, Any], family: str) -> bool:
    """Whether the config file ``path`` (its fields ``data``) is a run's own ``config.json``:
    in the run's folder, or copied elsewhere (a text run records the machine,
    :data:`MACHINE_RECORDS`; a meta run the package that wrote it, :data:`RECORDED_BY`:
    :data:`~algorithms.commands.records.RUN_MARKS`)."""
    return in_its_run_folder(path) or any(key in data for key in RUN_MARKS[family])


def learner_named(args: list[str], config: Any, own: train.OwnLearner | None = None) -> list[str]:
    """``args`` with the learner of ``config`` (a ``train`` command's, from its file) named
    after the family where the command line names none (``train text --config FILE`` ->
    ``train text magrpo --config FILE``): tyro took a ``--no-*`` flag right after ``--config
    FILE`` for the family's, and refused it, when the learner was only the file's. A
    learner of one's own (``own``) is named on the command line already."""
    named, line_algo = line_command(args)
    if line_algo is not None or own is not None or named.split()[0] not in FAMILIES:
        return args
    family = named.split()[1]
    algo = next(name for name, kind in {"meta": META_CONFIGS, "text": TEXT_CONFIGS}[family].items() if type(config) is kind)
    at = args.index(family) + 1
    return [*args[:at], algo, *args[at:]]


def without_protocol(data: dict[str, Any]) -> dict[str, Any]:
    """A text config file's fields ``data`` without its ``protocol``, wherever the file
    gives it: flat (a run's ``config.json``), under ``env``, or under a comparison's
    ``learner`` (a comparison's ``config.json`` names its ``--protocol ./file.py:name``,
    which a file may not, so resuming it from that file gives the protocol again)."""
    data = dict(data)
    data.pop("protocol", None)
    for key in ("env", "learner"):
        if isinstance(data.get(key), dict):
            data[key] = without_protocol(data[key])
    return data


def file_learner(
    path: Path, algo: Any, record: bool, named: str, line_algo: str | None, own: train.OwnLearner | None
) -> type:
    """The config class of the learner that a ``train`` command's config file ``path``
    (its ``algo``, None where it names none; ``record``: a run's own ``config.json``) and its
    command line (``named``, the command; ``line_algo``, a shipped learner's name, or ``own``,
    one's own by import path) train.

    Raises:
        ValueError: Naming the file, on a learner named twice differently or not at all, or
            an ``algo`` that is no shipped learner's (a learner of one's own is named on the
            command line: a file may not import code).
    """
    family = named.split()[1]
    configs = {"meta": META_CONFIGS, "text": TEXT_CONFIGS}[family]
    if own is not None:  # the file's algo: the learner's own name, or the shipped one its config derives from
        if algo is not None and algo != own.name and not (algo in configs and issubclass(own.config, configs[algo])):
            raise ValueError(f"config file {path} trains {algo}, the command line names {own.path} ({own.name}): give one")
        return own.config
    if record and isinstance(algo, str) and algo not in configs:
        raise ValueError(
            f"config file {path} records a run of {algo}, a learner of your own: name it again by its import path "
            f"in the learner's place, as a config file may not (importing runs code): "
            f"deliberate {named} ./its_file.py:Class --config {path}"
        )
    if algo is not None and (not isinstance(algo, str) or algo not in configs):
        raise ValueError(
            f"config file {path}: algo {algo!r} is not one of {', '.join(configs)} (a learner of your own is named "
            f"by its import path on the command line: deliberate {named} ./mine.py:Mine --config {path})"
        )
    if algo is not None and line_algo is not None and algo != line_algo:
        raise ValueError(f"config file {path} trains {algo}, the command line names {line_algo}: give one")
    algo = algo or line_algo
    if algo is None:
        raise ValueError(f"name the learner: deliberate {named} {'|'.join(configs)} --config {path} (or algo: in the file)")
    return configs[algo]


def file_defaults(path: Path, args: list[str], own: train.OwnLearner | None = None) -> Deliberate:
    """The command that the command line ``args`` names, with the values of the config file
    ``path`` as its defaults (a learner's file names it by ``algo``, else the command line
    does, by name or, ``own``, by import path).

    Raises:
        ValueError: Naming the file and the field, on a field the command does not have or a
            value it refuses (:func:`algorithms.core.config_files.build`), or a learner
            named twice differently or not at all (:func:`file_learner`).
    """
    named, line_algo = line_command(args)
    data = read_config_file(path, named)
    first, family = named.split()[:2]
    if family == "text" and any(arg == "--protocol" or arg.startswith("--protocol=") for arg in args):
        data = without_protocol(data)  # the command line names it (a file may not name an import path: it runs code)
    if family == "text" and first in ("train", "compare"):
        check_comlrl_keys(data, path)
    if first in FAMILIES:
        record = run_record(Path(path), data, family)
        kind = file_learner(path, data.pop("algo", None), record, named, line_algo, own)
        if record:
            data = settings_of_run(Path(path), data, family, args)
            if family == "text":
                data = config_files.nested(kind, data, left_out=MACHINE_RECORDS)  # a run's own record, flat
        loaded: Any = FAMILIES[first][family](learner=config_files.build(kind, data, str(path)))
    else:
        kind = next(kind for kind, (command, _) in COMMANDS.items() if command == named)
        if "algos" in data and any(arg == "--algos" or arg.startswith("--algos=") for arg in args):
            del data["algos"]  # the command line names them (a file may not name an import path: it runs code)
        loaded = config_files.build(kind, data, str(path))
    return Deliberate(command=CONTAINERS[first](command=loaded, config=path))


def parse(args: list[str]) -> Deliberate:
    """The config of the command line ``args``, parsed once by tyro. With ``--config FILE``,
    the file's values are the defaults of that parse, so that the options given override them.
    A ``train`` command line that gives a learner of one's own by import path
    (:func:`own_learner`) is parsed with that learner's config among the subcommands
    (:func:`with_own_learner`).

    Raises:
        ValueError: When the file names another command or learner than the command line,
            or an option is unknown (one line naming the nearest option).
    """
    check_per_run_options(args)
    readable_help()
    path = config_path(args)
    own = own_learner(args)
    default = None if path is None else file_defaults(path, args, own)
    if default is not None and hasattr(default.command.command, "learner"):
        args = learner_named(args, default.command.command.learner, own)
    registry = COMPARE_REGISTRY if line_words(args)[:1] == ["compare"] else None
    if own is not None:
        registry = with_own_learner(own, line_words(args)[1])
    printed = io.StringIO()  # what tyro prints: its error box is shown unless one line says it
    try:
        with contextlib.redirect_stderr(printed):
            parsed = tyro.cli(
                Deliberate, args=args, prog="deliberate", config=MARKERS, default=default, registry=registry
            )
    except SystemExit as exit_:
        short = short_error(printed.getvalue(), " ".join(["deliberate", *line_words(args)])) if exit_.code else None
        short = (misplaced_learner(args) or short) if exit_.code else None
        if short is not None:
            raise ValueError(short) from None
        sys.stderr.write(printed.getvalue())
        raise
    sys.stderr.write(printed.getvalue())
    return parsed


DATA_PARALLEL = ("train text", "compare text", "evaluate text")
"""The commands that ``torchrun`` runs data-parallel (:mod:`algorithms.core.data_parallel`)."""


def check_processes(command: str) -> None:
    """Refuse ``command`` under ``torchrun`` with more than one process unless it is one of
    :data:`DATA_PARALLEL`: every process would run it alone, writing the same folder.

    Raises:
        ValueError: Naming the commands that run data-parallel.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))  # torchrun's (data_parallel.from_environment: no torch here)
    if world_size > 1 and command not in DATA_PARALLEL:
        raise ValueError(
            f"{command} runs in one process, not under torchrun ({world_size} processes here, each would run it "
            f"alone): {', '.join(DATA_PARALLEL)} run data-parallel; the meta seat scales over Ray workers (--workers)"
        )


# ---------------------------------------------------------------------------- the entry
def tell_torchrun(line: str) -> None:
    """Under ``torchrun``, write ``line`` to the error file torchrun reads
    (``TORCHELASTIC_ERROR_FILE``, the format of torch's own ``ErrorHandler``), so its failure
    report shows this process's one-line error as the root cause, not a pointer to how to
    enable tracebacks; elsewhere nothing."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if path:
        record = {"message": {"message": line, "extraInfo": {"py_callstack": line, "timestamp": str(int(time.time()))}}}
        with contextlib.suppress(OSError):  # the one-line error is printed already
            Path(path).write_text(json.dumps(record))


class Terminated(KeyboardInterrupt):
    """SIGTERM, as a cluster's scheduler sends it before it preempts a job (SLURM, then
    SIGKILL after its grace time): an interruption like Ctrl-C, so the command says how to
    continue, and exits 143 (128 + SIGTERM, what the signal's default gives a scheduler to
    read)."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def sigterm_interrupts() -> Any:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread, where no
    handler of another program's is installed (an embedding program's stays); the handler
    before it is put back after. Not under torchrun: its agent stops the other workers
    with SIGTERM when one failed, and a Python handler would wait for a collective that
    waits for the dead worker (the default ends the process at once, and torchrun reports)."""
    under_torchrun = "TORCHELASTIC_RUN_ID" in os.environ or int(os.environ.get("WORLD_SIZE", "1")) > 1
    main_thread = threading.current_thread() is threading.main_thread()
    if under_torchrun or not main_thread or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deliberate`` console script (``argv``: the arguments, default
    ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    prog = command_name(args)
    data_log = RichHandler(console=console, show_time=False, show_level=False, show_path=False, markup=False)
    tasks_log = logging.getLogger("deliberation_env.tasks")  # what the tasks announce about the data
    tasks_log.addHandler(data_log)
    tasks_log.setLevel(logging.INFO)
    run_dirs.OPENED.clear()  # the folders this command opens, for an interruption's message
    try:
        with warnings.catch_warnings(), sigterm_interrupts():
            warnings.showwarning = show_warning(prog)
            check_lists(args)
            chosen = parse(args).command.command
            check_processes(COMMANDS[type(chosen)][0])
            COMMANDS[type(chosen)][1](chosen)
    except USER_ERRORS as error:
        if "--debug" in args:
            raise
        message = as_flags(str(error.args[0] if isinstance(error, KeyError) and error.args else error))
        print(f"{prog}: error: {message}", file=sys.stderr)
        tell_torchrun(f"{prog}: error: {message}")
        raise SystemExit(2) from None
    except BrokenPipeError:  # `deliberate ... --help | head` closed the pipe: nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit stays quiet
        raise SystemExit(1) from None
    except KeyboardInterrupt as interruption:
        if "--debug" in args:
            raise
        terminated = isinstance(interruption, Terminated)
        print(f"{prog}: {'terminated (SIGTERM)' if terminated else 'interrupted'}{run_dirs.resume_hint()}", file=sys.stderr)
        raise SystemExit(143 if terminated else 130) from None
    finally:
        tasks_log.removeHandler(data_log)


if __name__ == "__main__":
    main()
