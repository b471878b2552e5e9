"""``deliberate tasks list|show``: the built-in tasks, and one problem of a task."""

from __future__ import annotations

from dataclasses import dataclass

import tyro

import deliberation_env as de
from algorithms.commands.common import check_choice, console
from algorithms.core.help_text import plain_markup


@dataclass
class TasksList:
    """List the built-in tasks."""


@dataclass
class TasksShow:
    """Describe a task and print one of its problems."""

    name: tyro.conf.Positional[str]
    """Task name (``deliberate tasks list``)."""
    path: str | None = None
    """Data of a file-based task: a JSONL file, a folder with train.jsonl and test.jsonl,
    ``hf:<dataset>[:<config>]`` or ``sample`` (docs/data.md)."""
    split: str = "test"
    """Split to take the problem from, ``train`` or ``test``."""
    index: int = 0
    """Which problem to print (0: the first)."""


def list_tasks(cfg: TasksList) -> None:
    """``deliberate tasks list``: a table of the tasks and what each is."""
    from rich.table import Table

    table = Table(title="tasks")
    table.add_column("name")
    table.add_column("what")
    for name in de.tasks.names():
        doc = (de.tasks.task_class(name).__doc__ or "").strip().splitlines()
        table.add_row(name, plain_markup(doc[0]) if doc else "")
    console.print(table)


def show_task(cfg: TasksShow) -> None:
    """``deliberate tasks show NAME``: the task, its split's size, its answer format and one problem."""
    check_choice("NAME", cfg.name, de.tasks.names())
    check_choice("--split", cfg.split, de.tasks.SPLITS)
    task = de.tasks.get(cfg.name, **({"path": cfg.path} if cfg.path else {}))
    problems = task.problems(cfg.split)
    if not 0 <= cfg.index < len(problems):
        raise ValueError(f"--index {cfg.index} is not a problem of the {cfg.split} split: give 0 to {len(problems) - 1}")
    problem = problems[cfg.index]
    console.print(f"[bold]{cfg.name}[/bold]: {plain_markup((type(task).__doc__ or '').strip().splitlines()[0])}")
    console.print(f"{len(problems)} problems in split {cfg.split!r}")
    console.print(f"answer format: {task.instructions}")
    console.print(f"\n[bold]{problem.id}[/bold]\n{problem.question}\n\nreference decision: {problem.answer!r}")
