"""Write a benchmark's results as JSON under ``benchmarks/results/``.

Every script in ``benchmarks/`` ends by calling :func:`write_results` with the numbers it
printed, so that a table in BENCHMARKS.md can be traced to the run that made it: the file
``benchmarks/results/<name>.json`` holds the command line, the machine, the thread settings,
the date, the git commit and the script's own record (:func:`provenance`). A later run of the
same benchmark replaces the file.

A script that keeps one result per run (``text_learning.py``'s ``summary.json`` files) stores
:func:`provenance` in each, and a table built from them names the commits that made its runs
(:func:`commits_of`): a table whose runs come from several commits says so.

The scripts run as ``python benchmarks/<script>.py``, which puts this folder first on
``sys.path``, so they import it as ``from results import write_results``.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

RESULTS_DIR = Path(__file__).resolve().parent / "results"
"""Where :func:`write_results` writes (``benchmarks/results/``)."""

REPO = Path(__file__).resolve().parent.parent
"""The checkout whose commit a result records."""


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else what :mod:`platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the numbers were measured on.

    Returns:
        ``platform`` (OS and architecture), ``cpu`` (model name), ``cores`` (logical CPUs
        of the machine), ``torch_threads`` (this process's intra-op threads), ``gpu`` (the
        first CUDA device's name, or None), ``load_average`` (the 1-minute load when the
        results were written: other jobs on a shared machine slow a benchmark down),
        ``python`` and ``torch`` versions.
    """
    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "load_average": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def _git(*arguments: str) -> subprocess.CompletedProcess:
    """``git ARGUMENTS`` in this checkout; a failed run where there is no git."""
    try:
        return subprocess.run(["git", *arguments], cwd=REPO, capture_output=True, text=True, check=False)
    except FileNotFoundError:  # no git on this machine
        return subprocess.CompletedProcess([], returncode=1, stdout="")


def git_commit() -> dict[str, Any]:
    """The checkout's commit, and whether tracked files differ from it.

    Where ``DELIBERATION_ENV_SOURCE_COMMIT`` names a commit (a tree copied to another
    machine, as the GPU check's is: outside a git checkout, or inside one the copy's base
    whose files are this tree's, which git then calls the base commit, dirty), that commit
    is recorded with ``commit_from: "environment"``, so a reader sees that the copy, not
    git, named it.

    Returns:
        ``commit`` (the full hash, or None outside a git checkout without the variable) and
        ``dirty`` (tracked files modified since that commit; None without a checkout or
        where the variable named it, then with what git says under ``git``).
    """

    named = os.environ.get("DELIBERATION_ENV_SOURCE_COMMIT")
    head = _git("rev-parse", "HEAD")
    checkout = None
    if head.returncode == 0:
        status = _git("status", "--porcelain", "--untracked-files=no")
        checkout = {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}
    if named:  # on the 2026-11-30 H200 the copy sat in a checkout of an older commit: git named that one
        return {"commit": named, "dirty": None, "commit_from": "environment", **({"git": checkout} if checkout else {})}
    return checkout or {"commit": None, "dirty": None}


AT_START = git_commit()
"""The checkout's commit when this process imported the module, before its runs."""


def threads() -> dict[str, Any]:
    """The thread settings of this process: they set a run's speed, and its float-level results.

    Returns:
        ``torch`` (intra-op threads), ``omp_num_threads`` (the ``OMP_NUM_THREADS`` variable,
        None when unset) and ``affinity`` (the CPUs this process may run on, e.g. ``[1]``
        under ``taskset -c 1``; None where the OS does not say: only Linux does).
    """
    return {
        "torch": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "affinity": sorted(os.sched_getaffinity(0)) if sys.platform == "linux" else None,
    }


def provenance() -> dict[str, Any]:
    """What produced a result, recorded where the result is written.

    Returns:
        ``command`` (this process's command line), ``date`` (now, with the UTC offset),
        ``commit`` and ``dirty`` (:func:`git_commit` when this module was imported: the code
        the process loaded; ``commit_at_write`` beside them where the checkout has moved
        since, as under a run of an hour while commits land), ``machine``
        (:func:`machine`) and ``threads`` (:func:`threads`).
    """
    now = git_commit()
    moved = {} if now == AT_START else {"commit_at_write": now}  # the tree moved under a long run
    return {
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        **AT_START,
        **moved,
        "machine": machine(),
        "threads": threads(),
    }


UNRECORDED = "unrecorded"
"""The commit :func:`commits_of` gives a run stored without its provenance."""


def code_commit(commit: str) -> str:
    """The commit whose code a run recorded at ``commit`` ran: the last commit at or before
    ``commit`` that changed a file outside ``benchmarks/results/``.

    A queue that commits each run's result as it finishes (``text_learning.py --commit``)
    moves HEAD between its runs, not the code, so its runs name one code commit. Where git
    does not know ``commit`` (no checkout, a shallow clone), ``commit`` itself. The answer
    is as long as ``commit`` (a short hash stays short).
    """
    found = _git("log", "-1", "--format=%H", commit, "--", ".", ":(exclude)benchmarks/results").stdout.strip()
    return found[: len(commit)] if found else commit


def commit_name(record: Mapping[str, Any] | None) -> str:
    """The code a result was made with: its :func:`code_commit`, ``-dirty`` appended when
    tracked files differed from it, or :data:`UNRECORDED` (no provenance, or none outside a
    checkout)."""
    if not record or record["commit"] is None:
        return UNRECORDED
    return code_commit(record["commit"]) + ("-dirty" if record["dirty"] else "")


def commits_of(runs: Mapping[str, Mapping[str, Any] | None]) -> dict[str, list[str]]:
    """Which runs each commit made, ``{commit: [run names]}`` (:func:`commit_name`), from
    ``{run name: its provenance}``: a table built from the runs names them all.

    >>> commits_of({"a": {"commit": "f6ecbc6", "dirty": False}, "b": None})
    {'f6ecbc6': ['a'], 'unrecorded': ['b']}
    """
    commits: dict[str, list[str]] = {}
    for name, record in runs.items():
        commits.setdefault(commit_name(record), []).append(name)
    return commits


def _plain(value: Any) -> Any:
    """JSON for what :func:`json.dumps` does not know: numpy numbers and arrays, paths."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable: convert it in the record")


def write_results(name: str, record: dict[str, Any]) -> Path:
    """Write ``record`` with its :func:`provenance` to ``benchmarks/results/<name>.json``.

    Args:
        name: The file's stem: the script's name, and its mode where it has several
            (``learning-update-time``).
        record: The script's results (what it printed, as numbers), and its arguments.

    Returns:
        The path written.
    """
    path = RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"name": name, **provenance(), "results": record}
    path.write_text(json.dumps(document, indent=2, default=_plain) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return path
