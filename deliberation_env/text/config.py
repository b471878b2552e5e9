"""The text-action env's arguments, in one place: :class:`TextEnvConfig`.

``de.text_env(**kwargs)``, ``de.text_vector_env(num_envs, **kwargs)`` and
``de.make("text-deliberation-v1", **kwargs)`` build a ``TextEnvConfig(**kwargs)``; the
LLM-weight learners' configs hold one as their ``env`` (:class:`algorithms.text.TextLearnerConfig`), so
``deliberate train text grpo --task gsm8k --path data/gsm8k`` and ``--config`` files take
the same arguments with the same defaults, documentation and checks. A bad argument
raises an error naming it before any task is loaded or protocol built. A config is data
and checks; it builds nothing: the protocol is built by
:func:`deliberation_env.text.env.build_protocol`, a vector env by
``de.vector_env_from(config, n)``. The meta-action env's counterpart is
:class:`deliberation_env.meta.config.EnvConfig`.

A protocol given by import path (``--protocol my_task.py:protocol``) runs the user's code:
it comes from the command line or from Python, never from a config file (``protocol`` is
marked :class:`ImportsCode`, and :mod:`algorithms.core.config_files` refuses an import path
there; a file may name ``math`` or ``coding``). The working directory is never searched
implicitly (:func:`import_protocol`).

>>> config = TextEnvConfig(task="arithmetic", difficulty=2, n_agents=3, max_turns=2)
>>> config.task_arguments(), config.max_turns
({'difficulty': 2}, 2)
>>> TextEnvConfig(protocol="debate")
Traceback (most recent call last):
...
ValueError: protocol must be None, one of ('math', 'coding'), an import path 'module:attribute' or a TextProtocol instance, got 'debate'
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

from deliberation_env.arguments import DEFAULT_TASK, task_arguments, with_max_cycles
from deliberation_env.task_config import REWARD_SCALES, TaskFields, name_on_the_command_line
from deliberation_env.tasks import Task
from deliberation_env.tasks.base import SPLITS, check_scoring
from deliberation_env.text.protocols.base import TextProtocol
from deliberation_env.values import is_integer, is_number

PROTOCOLS = ("math", "coding")
"""Protocols given by name (the writing protocol needs its corpus: give an instance)."""
CODE_TASKS = ("humaneval",)
"""Tasks whose default protocol is ``"coding"`` (every other task's is ``"math"``)."""


@dataclass(frozen=True)
class ImportsCode:
    """The mark of a field whose value may be an import path (``"module:attribute"``, see
    :func:`import_protocol`): reading it imports the module, which runs its code. Such a
    value comes from the command line or from Python, never from a config file, which is
    data (:mod:`algorithms.core.config_files` refuses it, naming ``flag``).

    Attributes:
        flag: The command-line option that takes the import path.
        names: The names a file may give instead.
    """

    flag: str
    names: tuple[str, ...]


def is_import_path(value: object) -> bool:
    """Whether ``value`` is an import path, ``"module:attribute"`` (a string with a colon).

    >>> is_import_path("my_task.py:protocol"), is_import_path("math")
    (True, False)
    """
    return isinstance(value, str) and ":" in value


def import_protocol(path: str) -> TextProtocol:
    """The protocol instance at ``path``, ``"module:attribute"``; this imports the module,
    so it runs its code: give an import path on the command line or from Python only.

    ``module`` is either the path of a Python file, ending in ``.py`` (``./my_task.py``,
    relative to the working directory, or absolute), loaded from there, or a dotted module
    name found on ``sys.path`` as ``import`` finds it (installed packages, ``PYTHONPATH``).
    The working directory is never added to ``sys.path``: a ``my_task.py`` beside the user
    is named by its path, ``./my_task.py:protocol``.

    >>> import_protocol("deliberation_env.text.config:DEFAULT_TASK")
    Traceback (most recent call last):
    ...
    TypeError: protocol 'deliberation_env.text.config:DEFAULT_TASK' is a str, not a TextProtocol instance
    """
    found = import_attribute(path, "protocol")
    if not isinstance(found, TextProtocol):
        raise TypeError(f"protocol {path!r} is a {type(found).__name__}, not a TextProtocol instance")
    return found


def import_attribute(path: str, what: str) -> Any:
    """The attribute at ``path``, ``"module:attribute"``, found as :func:`import_protocol`
    says (a ``.py`` file by its path, or a dotted module on ``sys.path``; never the working
    directory implicitly); this imports the module, so it runs its code.

    Args:
        path: The import path.
        what: What the attribute is, for the error (``"protocol"``, ``"learner"``).

    Raises:
        ValueError: When the module or the attribute cannot be imported, saying how to name it.
    """
    module_name, _, attribute = path.rpartition(":")
    try:
        return getattr(_import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        hint = "" if module_name.endswith(".py") else (
            f"; the working directory is not searched: name a file by its path "
            f"(./{module_name.replace('.', '/')}.py:{attribute}) "
            "or put its folder on PYTHONPATH"
        )  # fmt: skip
        raise ValueError(f"{what} {path!r}: cannot import {attribute!r} from {module_name!r} ({error}){hint}") from error


def _import_module(name: str) -> ModuleType:
    """The module ``name``: a dotted name, imported, or a ``.py`` file's path, loaded once
    under its file name (a name another module already holds is an ``ImportError``)."""
    if not name.endswith(".py"):
        return importlib.import_module(name)
    file = Path(name).resolve()
    if not file.is_file():
        raise ImportError(f"no file {file}")
    loaded = sys.modules.get(file.stem)
    if loaded is not None:
        if getattr(loaded, "__file__", None) == str(file):
            return loaded
        raise ImportError(f"a module named {file.stem!r} is already imported from elsewhere: rename {file.name}")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module  # as import does: dataclasses and pickle find the module by its name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[file.stem]
        raise
    return module


def config_record(config: Any) -> dict[str, Any]:
    """``config``'s fields (a :class:`TextEnvConfig` or a learner config holding one) as
    JSON data: what result files and checkpoints record, and what a resumed run compares.
    A task or protocol given as an instance is recorded by its name (``"<protocol NAME>"``:
    instances compare by name, not identity), a tuple as a list. The parts of a composed
    config (a learner config's ``env`` and ``run``) are recorded flat, their fields beside
    its own, as release 0.1 recorded them.

    >>> config_record(TextEnvConfig(task="arithmetic"))["task"], config_record(TextEnvConfig())["reward_scale"]
    ('arithmetic', 1.0)
    """
    record = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, TextProtocol):
            value = f"<protocol {value.name}>"
        elif isinstance(value, Task):
            value = f"<task {value.name}>"
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            record.update(config_record(value))  # a part, recorded flat
            continue
        elif isinstance(value, tuple):
            value = list(value)
        record[field.name] = value
    return record


SHAPLEY_MAX_AGENTS = 4
"""Largest team whose agents' Shapley values the env reports (``shapley``): it scores the
2^n subsets of the agents each turn (16 teams for 4 agents)."""


@dataclass
class TextEnvConfig(TaskFields):
    """Every argument of the text-action env (``de.text_env``, ``de.text_vector_env``) but
    the front-end's own ``render_mode``. Documented in :mod:`deliberation_env.text.env`.
    The task fields (``task``, ``path``, ``difficulty``, ``task_kwargs``, ``split``,
    ``scoring``, ``n_agents``, ``max_cycles``, ``reward_scale``) are those of
    :class:`~deliberation_env.task_config.TaskFields`, with its defaults."""

    # Protocol
    protocol: Annotated[
        str | TextProtocol | None, name_on_the_command_line("NAME"), ImportsCode("--protocol", PROTOCOLS)
    ] = None
    """How the team collaborates: None (the task's default: ``coding`` for humaneval,
    ``math`` for every other task), ``math``, ``coding``, the import path of a protocol
    instance, ``"module:attribute"`` with ``module`` a ``.py`` file's path or an importable
    module (e.g. ``./my_task.py:protocol``, a
    :class:`~deliberation_env.text.protocols.function.FunctionProtocol`), which imports
    and runs that code: it is taken from the command line or from Python, never from a
    config file; or from Python a
    :class:`~deliberation_env.text.protocols.base.TextProtocol` instance (e.g. a
    ``WritingProtocol``)."""

    # Episode
    max_turns: int | None = None
    """Turns per episode (>= 1; None: 1); from turn 2 each prompt carries the feedback
    (CoMLRL's ``num_turns``, its external transition)."""
    stop_threshold: float | None = None
    """End an episode early once the joint reward R reaches this value (None: never;
    CoMLRL's ``termination_threshold``)."""

    # Rewards
    shapley: bool = False
    """Also report each agent's Shapley value in R, ``reward_components["shapley"]``
    (teams of at most ``SHAPLEY_MAX_AGENTS``): the env then scores every subset of the
    agents each turn, 2^n teams where the leave-one-out contribution scores n + 1 (the math
    protocol with three agents stepped 0.6x as fast). The LLM-weight learners'
    ``credit="shapley"`` turns it on."""

    def __post_init__(self) -> None:
        self.max_turns = with_max_cycles("max_turns", self.max_turns, self.max_cycles, 1)
        self.max_cycles = None  # folded into max_turns, so that dataclasses.replace keeps working
        for name, low in (("n_agents", 2), ("max_turns", 1)):
            value = getattr(self, name)
            if not is_integer(value):
                raise TypeError(f"{name} must be an integer, got {value!r}")
            if value < low:
                raise ValueError(f"{name} must be >= {low}, got {value}")
            setattr(self, name, int(value))
        if self.split not in SPLITS:
            raise ValueError(f"split must be 'train' or 'test', got {self.split!r}")
        check_scoring(self.scoring)
        if not (is_number(self.reward_scale) and REWARD_SCALES[0] <= self.reward_scale <= REWARD_SCALES[1]):
            raise ValueError(
                f"reward_scale must be a number in [{REWARD_SCALES[0]:g}, {REWARD_SCALES[1]:g}] (rewards are float32), "
                f"got {self.reward_scale!r}"
            )
        if self.stop_threshold is not None and not (is_number(self.stop_threshold) and math.isfinite(self.stop_threshold)):
            raise ValueError(f"stop_threshold must be None or a finite number, got {self.stop_threshold!r}")
        if self.shapley and self.n_agents > SHAPLEY_MAX_AGENTS:
            raise ValueError(
                f"shapley reports the Shapley values of teams of at most {SHAPLEY_MAX_AGENTS} agents (2^n teams scored "
                f"each turn), got n_agents={self.n_agents}"
            )
        self._check_protocol()

    def _check_protocol(self) -> None:
        """The protocol and the task agree (nothing is loaded but an imported protocol's module)."""
        if is_import_path(self.protocol):
            import_protocol(self.protocol)
        if isinstance(self.protocol, TextProtocol) or is_import_path(self.protocol):
            if self.scoring != "strict":
                raise ValueError(
                    "a protocol instance brings its own scoring: give it to the protocol "
                    f"(MathProtocol(task, scoring={self.scoring!r})), not to the env"
                )
            given = [name for name in ("task", "path", "difficulty", "task_kwargs") if getattr(self, name)]
            if given:
                raise ValueError(
                    f"give a task or a protocol instance, not both: the protocol brings its problems (got {given})"
                )
            return
        if self.protocol is not None and self.protocol not in PROTOCOLS:
            raise ValueError(
                f"protocol must be None, one of {PROTOCOLS}, an import path 'module:attribute' or a "
                f"TextProtocol instance, got {self.protocol!r}"
            )
        task = DEFAULT_TASK if self.task is None else self.task
        task_arguments(task, self.task_kwargs, self.path, self.difficulty)  # name and data first
        name = task if isinstance(task, str) else task.name
        if self.protocol == "coding" and name not in CODE_TASKS:
            raise ValueError(f"the coding protocol needs the 'humaneval' task, got {name!r}")
        if self.protocol == "math" and name in CODE_TASKS:
            raise ValueError(f"task {name!r} needs protocol 'coding' (or None), not 'math'")
        if self.scoring == "lenient" and (self.protocol == "coding" or name in CODE_TASKS):
            raise ValueError(f"task {name!r} is judged by its tests: it has no lenient scoring (use scoring='strict')")

    def played(self) -> str:
        """What the env plays, for titles: the protocol brought by import path or instance
        (which brings its problems), else the task's name (the default's when none is given).

        >>> TextEnvConfig().played(), TextEnvConfig(task="gsm8k", path="sample").played()
        ('arithmetic', 'gsm8k')
        """
        if isinstance(self.protocol, TextProtocol):
            return self.protocol.name
        if self.protocol is not None and is_import_path(self.protocol):
            return self.protocol
        task = DEFAULT_TASK if self.task is None else self.task
        return task if isinstance(task, str) else task.name

    def task_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the task given by name: ``task_kwargs`` plus ``path`` and
        ``difficulty``."""
        return task_arguments(DEFAULT_TASK if self.task is None else self.task, self.task_kwargs, self.path, self.difficulty)

    def env_kwargs(self) -> dict[str, Any]:
        """The env's arguments as keywords of ``de.text_env`` / ``de.text_vector_env`` (of
        this class's fields only)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(TextEnvConfig)}
