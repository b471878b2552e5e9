"""The task fields both env families' configs take: :class:`TaskFields`, declared once;
:class:`TaskSource` (which problems: the task, its data, the split) is the part that
``deliberate run text`` takes too.

:class:`~deliberation_env.meta.config.EnvConfig` and
:class:`~deliberation_env.text.config.TextEnvConfig` inherit these nine fields (the task,
its data and arguments, the split, how answers are read, the team's size, PettingZoo's
episode length and the reward's scale) with their documentation, command-line form and
defaults; each family overrides, in one block, only what differs (the meta family: the
task's default and form, a hidden ``task_kwargs``, three agents). Each config checks them
in its own ``__post_init__`` (:mod:`deliberation_env.arguments` reads the task's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import tyro
from tyro.constructors import PrimitiveConstructorSpec

from deliberation_env.tasks import Task


def name_on_the_command_line(metavar: str) -> PrimitiveConstructorSpec:
    """``--task NAME`` / ``--protocol NAME``: a name, or ``None`` (instances are for Python callers)."""
    return PrimitiveConstructorSpec(
        nargs=1,
        metavar=metavar,
        instance_from_str=lambda args: None if args[0] == "None" else args[0],
        is_instance=lambda value: True,
        str_from_instance=lambda value: [
            value if isinstance(value, str) else "None" if value is None else value.name
        ],
    )


@dataclass
class TaskSource:
    """Which problems: the task, its data and the split (every env config, and
    ``deliberate run text``, which overrides the task and split defaults)."""

    task: Annotated[str | Task | None, name_on_the_command_line("NAME")] = None
    """Task name (``deliberate tasks list``) or, from Python, a :class:`Task`; None:
    ``arithmetic``. Not with a protocol instance, which brings its own problems."""
    path: str | None = None
    """Data of a file-based task (gsm8k, math, aime, amc, mmlu, jsonl, humaneval): a JSONL file, a
    folder with train.jsonl and test.jsonl, ``hf:<dataset>[:<config>]`` or ``sample`` (docs/data.md);
    None: the copy that ships with the package, where one does (humaneval)."""
    split: str = "train"
    """Problem split, ``train`` or ``test``."""


REWARD_SCALES = (1e-30, 1e30)
"""The reward scales both env families take: their vector envs report float32 rewards, which
turned a scale of 1e39 into inf and one of 1e-46 into 0 (a red team's)."""


@dataclass
class TaskFields(TaskSource):
    """The fields of an env config that say which problems a team of how many agents plays,
    how its answers are read and how its reward is scaled (both families)."""

    difficulty: int | None = None
    """Arithmetic difficulty, 1 (single-digit sums) to 5 (word problems); None: the task's
    default, 1 (``deliberate train meta`` and ``compare meta``: 3). Task ``arithmetic`` only."""
    task_kwargs: dict[str, int | float | str] | None = None
    """Further keyword arguments of a task given by name (``de.tasks.get(task, **task_kwargs)``)."""
    scoring: Literal["strict", "lenient"] = "strict"
    """How the task reads answers: ``strict`` (only a final answer stated in the form the
    prompt asks for counts, e.g. "The answer is N."; an answer cut at the token budget is
    no answer) or ``lenient`` (the task's forgiving reader, e.g. the last number anywhere).
    Answer tasks only (humaneval: strict); not with a protocol instance, which brings its own."""
    n_agents: int = 2
    """Agents in the team (>= 2; the text env's coding and writing protocols seat exactly 2)."""
    max_cycles: tyro.conf.Suppress[int | None] = None
    """PettingZoo's name for the episode length (``max_rounds``, ``max_turns``; its
    ``max_cycles_test`` passes it); give one."""
    reward_scale: float = 1.0
    """Multiplies every reward (in :data:`REWARD_SCALES`; the text env's reward parts in infos are unscaled)."""
