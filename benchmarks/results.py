"""Write a benchmark's results as JSON under ``benchmarks/results/``.

Every script in ``benchmarks/`` ends by calling :func:`write_results` with the numbers it
printed, so that a table in BENCHMARKS.md can be traced to the run that made it: the file
``benchmarks/results/<name>.json`` holds the command line, the machine, the date, the git
commit and the script's own record. A later run of the same benchmark replaces the file.

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


def git_commit() -> dict[str, Any]:
    """The checkout's commit, and whether tracked files differ from it.

    Returns:
        ``commit`` (the full hash, or None outside a git checkout, e.g. in a copied
        tree) and ``dirty`` (tracked files modified since that commit; None without one).
    """

    def git(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *arguments], cwd=REPO, capture_output=True, text=True, check=False)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return {"commit": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def _plain(value: Any) -> Any:
    """JSON for what :func:`json.dumps` does not know: numpy numbers and arrays, paths."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable: convert it in the record")


def write_results(name: str, record: dict[str, Any]) -> Path:
    """Write ``record`` with its provenance to ``benchmarks/results/<name>.json``.

    Args:
        name: The file's stem: the script's name, and its mode where it has several
            (``learning-update-time``).
        record: The script's results (what it printed, as numbers), and its arguments.

    Returns:
        The path written.
    """
    path = RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "name": name,
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        **git_commit(),
        "machine": machine(),
        "results": record,
    }
    path.write_text(json.dumps(document, indent=2, default=_plain) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return path
