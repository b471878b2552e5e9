"""Arguments that both env families' configs take and read the same way: the task's
keyword arguments from the ``path`` and ``difficulty`` shortcuts, the task they give, and
the episode length under PettingZoo's name ``max_cycles``.

>>> task_arguments("arithmetic", None, None, 2)
{'difficulty': 2}
>>> from deliberation_env.meta.config import EnvConfig
>>> build_task(EnvConfig(task="arithmetic", difficulty=2, scoring="lenient")).scoring
'lenient'
>>> with_max_cycles("max_rounds", None, 4, default=3)
4
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from deliberation_env.tasks import Task, check_data, check_name, get
from deliberation_env.tasks.base import with_scoring

DEFAULT_TASK = "arithmetic"
"""The task of an env of either family that names none (and, in the text family, brings
no protocol instance)."""


def with_max_cycles(name: str, value: Any, max_cycles: Any, default: int) -> Any:
    """The episode length from the env's own argument ``name`` or PettingZoo's ``max_cycles``.

    Raises:
        ValueError: When both are given.
    """
    if value is not None and max_cycles is not None:
        raise ValueError(f"give {name} or max_cycles (PettingZoo's name for it), not both: got {value!r} and {max_cycles!r}")
    return next((v for v in (value, max_cycles) if v is not None), default)


def task_arguments(
    task: Any, task_kwargs: Mapping[str, Any] | None, path: str | None, difficulty: int | None
) -> dict[str, Any]:
    """The keyword arguments of a task given by name: ``task_kwargs`` plus ``path`` and
    ``difficulty`` (the shortcuts of both env families' configs). The task's name and data
    are checked first, then its arguments.

    Raises:
        TypeError, ValueError: When the task name is unknown (naming the closest), a task
            that reads data is given no ``path``, an argument is given twice,
            ``difficulty`` is given for a task other than arithmetic, or arguments are given
            with a Task instance.
    """
    if isinstance(task, str):
        check_name(task)
    if task_kwargs is not None and not isinstance(task_kwargs, Mapping):
        raise TypeError(f"task_kwargs must be a dict or None, got {task_kwargs!r}")
    shortcuts = {k: v for k, v in (("path", path), ("difficulty", difficulty)) if v is not None}
    arguments = dict(task_kwargs or {})
    for name in set(shortcuts) & set(arguments):
        raise ValueError(f"{name} is given twice, as an argument and in task_kwargs")
    arguments.update(shortcuts)
    if not isinstance(task, str):
        if arguments:
            raise ValueError(
                f"task_kwargs are only used with a task name, not a Task instance (nor are path and "
                f"difficulty); got {sorted(arguments)}"
            )
        if not isinstance(task, Task):
            raise TypeError(f"task must be a task name or a Task, got {type(task).__name__}")
    else:
        check_data(task, arguments)
        if "difficulty" in arguments and task != "arithmetic":
            raise ValueError(f"difficulty is an argument of task 'arithmetic' only, got task {task!r}: leave it unset")
    return arguments


class TaskChoice(Protocol):
    """What a config of either family says about its task (both configs are one)."""

    task: str | Task | None
    scoring: str

    def task_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the task given by name (:func:`task_arguments`)."""
        ...


def build_task(config: TaskChoice) -> Task:
    """The config's task instance (a name, or None for :data:`DEFAULT_TASK`, is loaded with
    its task arguments), reading its answers under ``config.scoring``.

    Raises:
        ValueError: On ``scoring="lenient"`` for a task without that option (humaneval).
    """
    task = DEFAULT_TASK if config.task is None else config.task
    return with_scoring(task if isinstance(task, Task) else get(task, **config.task_arguments()), config.scoring)
