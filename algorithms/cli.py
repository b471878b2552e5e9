"""The ``deliberate`` command line: its grammar, and the entry that hands the arguments to
tyro once and runs the command chosen (:mod:`algorithms.commands`, one module per command).

.. code-block:: text

    deliberate run [meta|text] ...                      fixed protocols with a team (the main job)
    deliberate train [meta|text [magrpo|grpo|softrankpo]] ...   one learner
    deliberate compare [meta|text] ...                  learners x seeds on the same env and budget
    deliberate tasks list | show NAME
    deliberate cache stats | clear | merge OUT IN [IN ...] [--trust]

The family is a subcommand: ``meta`` (the meta-action env, the default, so ``deliberate run``
is the main job) or ``text`` (the text-action env). Every option has one name: the env's
options have no prefix (``--task``, ``--team``), a meta learner's own carry its name
(``--softrankpo.kl-coef``); ``--env-workers`` are the Ray workers of the env, ``--rollout-workers``
those that sample the text learners' completions. Lists are separated by spaces
(``--algos softrankpo grpo``). ``--config FILE`` starts from a YAML or JSON file
(``examples/configs/``) whose values the options given override.

A mistake on the command line or in a data or config file prints one line,
``deliberate <command>: error: ...``, and exits with status 2 (``--debug`` shows the
traceback); the package's warnings print as one line too. The commands import torch and
the models only when they run, so ``--help`` is fast.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import io
import logging
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import tyro
from rich.logging import RichHandler
from tyro.constructors import ConstructorRegistry, StructConstructorSpec, StructTypeInfo

from agents.cache import CacheFileError
from algorithms.commands import cache, compare, run, tasks, train
from algorithms.commands.common import console
from algorithms.core import config_files
from algorithms.meta.config import CompareConfig, TrainConfig


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
    """Train one learner: a meta-policy (``train`` or ``train meta --algo softrankpo|grpo|magrpo|sft``)
    or the LLMs' weights (``train text [magrpo|grpo|softrankpo]``); held-out results, metrics,
    checkpoints, in a folder of the run's own (``--run-dir`` names one, ``--resume`` continues it)."""

    command: Annotated[
        Annotated[TrainConfig, tyro.conf.subcommand("meta")]
        | Annotated[train.TextTrain, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ] = field(default_factory=TrainConfig)
    config: Path | None = None
    """A YAML or JSON file (``examples/configs/``) whose values start the command; the
    options given override them. It maps the command's fields by their Python names,
    nested as its config nests them (``train``: ``algo: grpo``, ``updates: 50``,
    ``env: {task: gsm8k, path: data/gsm8k}``, ``grpo: {kl_coef: 0.1}``; ``train text``:
    ``algo: grpo``, ``env: {...}``, ``run: {updates: 50}``, the learner's own fields); a
    first line ``command: train`` (or ``train text``) is optional and, if given, must name
    this command."""


@dataclass
class Compare:
    """Compare learners over seeds on the same env, problems and budget: the meta-policy
    learners and the baselines (``compare`` or ``compare meta``) or the LLM-weight learners
    (``compare text``); a table with 95% confidence intervals, CSV/JSON files and plots."""

    command: Annotated[
        Annotated[CompareConfig, tyro.conf.subcommand("meta")]
        | Annotated[compare.TextCompare, tyro.conf.subcommand("text")],
        tyro.conf.arg(name=""),
    ] = field(default_factory=CompareConfig)
    config: Path | None = None
    """A YAML or JSON file (``examples/configs/``) whose values start the command; the
    options given override them. It maps the command's fields by their Python names,
    nested as its config nests them (``compare``: ``seeds: 3``, ``train: {updates: 50,
    env: {task: arithmetic}}``); a first line ``command: compare`` (or ``compare text``) is
    optional and, if given, must name this command."""


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
        | Annotated[Compare, tyro.conf.subcommand("compare")]
        | Annotated[Tasks, tyro.conf.subcommand("tasks")]
        | Annotated[Cache, tyro.conf.subcommand("cache")],
        tyro.conf.arg(name=""),
    ]
    debug: bool = False
    """Show the traceback of an error (for a bug report) instead of its one line."""


COMMANDS: dict[type, tuple[str, Any]] = {
    run.RunMeta: ("run", run.run_meta),
    run.RunText: ("run text", run.run_text),
    TrainConfig: ("train", train.train_meta),
    train.TextTrain: ("train text", train.train_text),
    CompareConfig: ("compare", compare.compare_meta),
    compare.TextCompare: ("compare text", compare.compare_text),
    tasks.TasksList: ("tasks list", tasks.list_tasks),
    tasks.TasksShow: ("tasks show", tasks.show_task),
    cache.CacheStats: ("cache stats", cache.cache_stats),
    cache.CacheClear: ("cache clear", cache.cache_clear),
    cache.CacheMerge: ("cache merge", cache.cache_merge),
}
"""Each command's config class: its name on the command line and the function that runs it."""
MARKERS = (tyro.conf.OmitSubcommandPrefixes, tyro.conf.CascadeSubcommandArgs)
"""Subcommands without their field's prefix (``train text``), options that may follow any
subcommand below the one they belong to, and the default family chosen by its options alone."""


# ---------------------------------------------------------------------------- errors
USER_ERRORS = (ValueError, TypeError, KeyError, FileNotFoundError, ImportError, CacheFileError)
"""What the package raises on a bad value, file, cache key or missing extra: one line, no traceback."""
LIST_FLAGS = (
    "--algos", "--reward-scales", "--baselines", "--policies", "--team", "--models", "--lora-targets",
    "--simulated.skill", "--simulated.refine-gain", "--simulated.self-fix", "--simulated.corruption",
)  # fmt: skip
"""Options that take a list, separated by spaces."""
COMMAND_WORDS = frozenset(
    word for name, _ in COMMANDS.values() for word in name.split()
) | {"meta", "magrpo", "grpo", "softrankpo"}
"""The words of the command names (what the error line's ``deliberate <command>`` shows)."""


class ConfigError(Exception):
    """A config's own check refused the values of the command line (tyro would show it
    under its internal field path; the entry prints it as the command's error line)."""


_building = contextvars.ContextVar("building", default=False)


def _checked_dataclasses() -> ConstructorRegistry:
    """A tyro registry that builds dataclasses as tyro does, but turns the ``ValueError``
    of a config's check into a :class:`ConfigError` that reaches the entry."""
    registry = ConstructorRegistry()

    @registry.struct_rule
    def checked(info: StructTypeInfo) -> StructConstructorSpec | None:
        if not dataclasses.is_dataclass(info.type) or _building.get():
            return None
        token = _building.set(True)  # tyro's own rule for the dataclass, not this one again
        try:
            spec = ConstructorRegistry.get_struct_spec(info)
        finally:
            _building.reset(token)
        if not isinstance(spec, StructConstructorSpec):
            return None

        def instantiate(*args: Any, **kwargs: Any) -> Any:
            try:
                return spec.instantiate(*args, **kwargs)
            except ValueError as error:
                raise ConfigError(str(error)) from error

        return dataclasses.replace(spec, instantiate=instantiate)

    return registry


REGISTRY = _checked_dataclasses()


def command_name(args: list[str]) -> str:
    """``deliberate`` and the command words that ``args`` starts with (``deliberate train text``)."""
    words = []
    for arg in args:
        if arg not in COMMAND_WORDS:
            break
        words.append(arg)
    return " ".join(["deliberate", *words])


def check_spellings(args: list[str]) -> None:
    """Refuse ``--algo`` after ``train text`` or a comma-separated list, naming what to write instead."""
    text_learner = "text" in args and "train" in args
    for k, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag == "--algo" and text_learner:
            raise ValueError("a text learner is a subcommand: 'deliberate train text grpo ...' (not --algo grpo)")
        first = value if equals else " ".join(args[k + 1 : k + 2])  # the list's first value
        if flag in LIST_FLAGS and "," in first and not first.startswith("-"):
            spaced = " ".join(part for part in first.split(",") if part)
            raise ValueError(f"{flag} takes values separated by spaces, not commas: did you mean {flag} {spaced}?")


def known_options(args: list[str]) -> set[str]:
    """The options of the command that ``args`` names, as its ``--help`` lists them."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        tyro.cli(Deliberate, args=[*command_name(args).split()[1:], "--help"], prog="deliberate", config=MARKERS)
    return set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9.-]*", shown.getvalue()))


def check_options(args: list[str]) -> None:
    """Refuse the first option of ``args`` that its command does not have, naming the
    nearest one it has (as argparse would, in one line)."""
    known = known_options(args)
    for arg in args:
        flag = arg.partition("=")[0]
        if flag.startswith("--") and flag not in known:
            close = difflib.get_close_matches(flag, sorted(known), n=1)
            raise ValueError(f"unrecognized option {flag}" + (f"; did you mean {close[0]}?" if close else ""))


def show_warning(prog: str) -> Any:
    """A ``warnings.showwarning`` that prints ``<prog>: warning: <message>`` on one line."""

    def show(message: Warning | str, *where: Any, **_: Any) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)  # not where: the file and line are the package's

    return show


# ---------------------------------------------------------------------------- config files
@dataclass
class ConfigFile:
    """The one option read before the grammar: the config file whose values are the
    defaults of the command the line names."""

    config: Path | None = None


CONTAINERS = {"run": Run, "train": Train, "compare": Compare}
"""The commands that take ``--config FILE``, by their first word."""


def line_command(args: list[str]) -> tuple[str, str | None]:
    """The command the command line ``args`` names (``train text``; ``meta`` left out) and
    the text learner it names, if any (``grpo`` of ``train text grpo``)."""
    words = command_name(args).split()[1:]
    algo = next((word for word in words if word in train.TEXT_ALGOS.values()), None)
    return " ".join(word for word in words if word not in ("meta", algo)), algo


def read_config_file(path: Path, named: str) -> dict[str, Any]:
    """The fields of the config file ``path`` given to the command ``named`` (``train text``).
    Its ``command`` key is optional (the command line decides); if given (``meta`` may be
    written or left out), it must name that command.

    Raises:
        ValueError: Naming the file, when ``named`` takes no config file or the file's
            ``command`` names another command.
    """
    if not named or named.split()[0] not in CONTAINERS:
        raise ValueError("--config FILE follows the command it starts: deliberate run|train|compare [meta|text] --config FILE")
    data = config_files.read(path)
    written = data.pop("command", None)
    written_for = None if written is None else " ".join(word for word in str(written).split() if word != "meta")
    if written_for is not None and written_for != named:
        raise ValueError(
            f"config file {path} is for 'deliberate {written_for}', not 'deliberate {named}': "
            f"give it to 'deliberate {written_for}', or change or leave out its command: key"
        )
    return data


def file_defaults(path: Path, args: list[str]) -> Deliberate:
    """The command that the command line ``args`` names, with the values of the config file
    ``path`` (a text learner's file names it by ``algo``, else the command line's, else magrpo).

    Raises:
        ValueError: Naming the file and the field, on a field the command does not have or a
            value it refuses (:func:`algorithms.core.config_files.build`).
    """
    named, line_algo = line_command(args)
    data = read_config_file(path, named)
    kind = next(kind for kind, (command, _) in COMMANDS.items() if command == named)
    if kind is train.TextTrain:
        algo = data.pop("algo", line_algo or "magrpo")
        classes = {name: cls for cls, name in train.TEXT_ALGOS.items()}
        if not isinstance(algo, str) or algo not in classes:
            raise ValueError(f"config file {path}: algo {algo!r} is not one of {', '.join(classes)}")
        loaded: Any = train.TextTrain(learner=config_files.build(classes[algo], data, str(path)))
    else:
        loaded = config_files.build(kind, data, str(path))
    return Deliberate(command=CONTAINERS[named.split()[0]](command=loaded, config=path))


def parse(args: list[str]) -> Deliberate:
    """The config of the command line ``args``. With ``--config FILE``, the file's values
    are the defaults of the command the line names, so that the options given override them.

    Raises:
        ValueError: When the file names another command than the command line, or another
            text learner, or an option is unknown (its command's nearest option named).
    """
    located, _ = tyro.cli(ConfigFile, args=args, return_unknown_args=True, add_help=False)
    default = None if located.config is None else file_defaults(located.config, args)
    printed = io.StringIO()  # what tyro prints: its error box is shown unless one line says it
    try:
        with contextlib.redirect_stderr(printed):
            parsed = tyro.cli(Deliberate, args=args, prog="deliberate", config=MARKERS, registry=REGISTRY, default=default)
    except SystemExit as exit_:
        if exit_.code:
            check_options(args)  # an unknown option: one line, the nearest option named
        sys.stderr.write(printed.getvalue())
        raise
    sys.stderr.write(printed.getvalue())
    if default is not None:
        chosen, loaded = parsed.command.command, default.command.command
        if isinstance(chosen, train.TextTrain) and type(chosen.learner) is not type(loaded.learner):
            file_algo, given = train.TEXT_ALGOS[type(loaded.learner)], train.TEXT_ALGOS[type(chosen.learner)]
            raise ValueError(f"config file {located.config} trains {file_algo}, the command line names {given}: give one")
    return parsed


# ---------------------------------------------------------------------------- the entry
def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deliberate`` console script (``argv``: the arguments, default
    ``sys.argv[1:]``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    prog = command_name(args)
    data_log = RichHandler(console=console, show_time=False, show_level=False, show_path=False, markup=False)
    tasks_log = logging.getLogger("deliberation_env.tasks")  # what the tasks announce about the data
    tasks_log.addHandler(data_log)
    tasks_log.setLevel(logging.INFO)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning(prog)
            check_spellings(args)
            chosen = parse(args).command.command
            COMMANDS[type(chosen)][1](chosen)
    except (ConfigError, *USER_ERRORS) as error:
        if "--debug" in args:
            raise
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"{prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        tasks_log.removeHandler(data_log)


if __name__ == "__main__":
    main()
