"""What loading the bundled GGUF costs a process: transformers' own reading of the file
against its dequantized folder (:mod:`agents.dequantized_gguf`), each in a fresh process.

Three loads of ``TrainableLM.from_pretrained(<the bundled SmolLM2 GGUF>)`` (two LoRA agents,
CPU, float32) and of the ``transformers:`` backend, each in a new Python process with a cache
folder of its own: ``cold`` (an empty cache: the process dequantizes and writes the folder)
and ``warm`` (the folder written: the process reads it). Each time includes the process's
imports (measured alone as ``imports``), as a user's command pays them.

    python benchmarks/gguf_load.py [--repeats 3]

Prints a table and writes ``benchmarks/results/gguf_load.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import tyro
from results import REPO, write_results

LOADS = {
    "imports": "import agents.trainable_lm, agents.transformers_backend",
    "TrainableLM.from_pretrained": (
        "from agents.trainable_lm import TrainableLM\nfrom agents.local import default_model_path\n"
        "TrainableLM.from_pretrained(default_model_path(), ['agent_0', 'agent_1'], device='cpu', dtype='float32')"
    ),
    "transformers: backend": (
        "from agents import make_backend\nfrom agents.local import default_model_path\n"
        "make_backend('transformers', model=default_model_path(), device='cpu')"
    ),
}


@dataclass
class Args:
    repeats: int = 3
    """Fresh processes per load and cache state (the median is reported)."""


def seconds(code: str, cache: str) -> float:
    """Wall time of a fresh ``python -c code`` with ``XDG_CACHE_HOME=cache``."""
    env = {**os.environ, "XDG_CACHE_HOME": cache, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main(args: Args) -> None:
    record: dict[str, dict[str, list[float]]] = {}
    for name, code in LOADS.items():
        record[name] = {"cold": [], "warm": []}
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                record[name]["cold"].append(round(seconds(code, cache), 2))
                if name != "imports":
                    record[name]["warm"].append(round(seconds(code, cache), 2))
    print("| load, fresh process | cold cache, s (median) | warm cache, s (median) | each, cold / warm |")
    print("|---|---:|---:|---|")
    for name, times in record.items():
        warm = f"{statistics.median(times['warm']):.1f}" if times["warm"] else ""
        print(f"| {name} | {statistics.median(times['cold']):.1f} | {warm} | {times['cold']} / {times['warm']} |")
    write_results("gguf_load", {"args": vars(args), "seconds": record})
    print(json.dumps(record))


if __name__ == "__main__":
    main(tyro.cli(Args))
