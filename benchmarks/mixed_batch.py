"""Joint sampling of two agents' adapters on one base: each agent's rows by slices
(:mod:`agents.trainable_lm.mixed`, the default) against peft's ``adapter_names`` path, on
the CPU, in one process, interleaved.

Two models:

- ``smollm2``: SmolLM2-135M-Instruct as the learners load it (float32, LoRA rank 8 on
  q/k/v/o of two agents), the table's workload;
- ``narrow-qwen``: Qwen2.5-1.5B's layout (28 blocks, LoRA rank 16 on all 7 linear layers
  of each: 196 LoRA layers) at width 64, random weights: almost no arithmetic, so a step's
  time is its fixed cost (Python and dispatch), the part a GPU does not hide.

Both agents get ``prompts`` prompts x G samples, ``new_tokens`` tokens each (exactly:
``min_new_tokens``), sampled at temperature 1. The adapters are moved apart at random
first (LoRA's B starts at 0), and every repeat checks that both paths sampled the same
completions, token for token and log-probability for log-probability::

    python benchmarks/mixed_batch.py --model smollm2
    python benchmarks/mixed_batch.py --model narrow-qwen --prompts 1 --group-size 1

Writes ``benchmarks/results/mixed_batch_<model>.json`` (:func:`results.write_results`).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Literal

import torch
import tyro
from gpu_check import (
    AGENTS,
    QWEN25_1_5B,
    SMOKE_SHAPE,
    lora_config,
    prompt_chats,
    random_model,
    through_peft,
    word_tokenizer,
)
from results import write_results

from agents.trainable_lm import TrainableLM
from algorithms.text.config import TextGRPOConfig
from algorithms.text.train import build_lm

NARROW_QWEN = {**SMOKE_SHAPE, "num_hidden_layers": QWEN25_1_5B["num_hidden_layers"]}
"""Qwen2.5-1.5B's 28 layers at the smoke model's width (64)."""


@dataclass
class Args:
    model: Literal["smollm2", "narrow-qwen"] = "smollm2"
    """The model (module docstring)."""
    prompts: int = 4
    """Prompts per agent."""
    group_size: int = 4
    """Samples per prompt (G)."""
    new_tokens: int = 32
    """Tokens per completion (exactly)."""
    repeats: int = 3
    """Timed joint samplings per path, interleaved (one warm-up each before)."""
    threads: int = 0
    """torch threads (0: torch's default)."""


def build(args: Args) -> tuple[TrainableLM, dict]:
    """The two agents' policy, and their requests."""
    if args.model == "smollm2":
        lm = build_lm(TextGRPOConfig(sample_batch_size=4096), list(AGENTS))
        chats = [[{"role": "user", "content": f"What is {17 * k + 5} + {9 * k + 2}? Answer with the number."}]
                 for k in range(args.prompts)]  # fmt: skip
    else:
        lm = TrainableLM(random_model(NARROW_QWEN), word_tokenizer(NARROW_QWEN["vocab_size"]), AGENTS, lora=lora_config(16),
                         sample_batch_size=4096)  # fmt: skip
        chats = prompt_chats(args.prompts, 32, NARROW_QWEN["vocab_size"], seed=0)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for agent in AGENTS:
            for parameter in lm.parameters(agent):
                parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
    repeated = [chat for chat in chats for _ in range(args.group_size)]
    seeds = list(range(len(repeated)))
    return lm, {agent: (repeated, seeds) for agent in AGENTS}


def timed_sampling(
    lm: TrainableLM, requests: dict, new_tokens: int, peft: bool
) -> tuple[float, dict]:
    """Seconds of one joint sampling, through peft's path or by slices, and its completions."""
    with through_peft() if peft else contextlib.nullcontext():
        started = time.perf_counter()
        joint = lm.sample_joint(
            requests, max_new_tokens=new_tokens, min_new_tokens=new_tokens, temperature=1.0
        )
        return time.perf_counter() - started, joint


def main(args: Args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    lm, requests = build(args)
    tokens = len(AGENTS) * args.prompts * args.group_size * args.new_tokens
    seconds: dict[str, list[float]] = {"slices": [], "peft": []}
    for repeat in range(args.repeats + 1):
        outputs = {}
        for path in ("slices", "peft") if repeat % 2 else ("peft", "slices"):
            elapsed, outputs[path] = timed_sampling(
                lm, requests, args.new_tokens, peft=path == "peft"
            )
            if repeat:  # the first round warms up
                seconds[path].append(elapsed)
        if outputs["slices"] != outputs["peft"]:
            raise SystemExit("the two paths sampled different completions")
    medians = {path: statistics.median(times) for path, times in seconds.items()}
    steps = args.new_tokens
    record = {
        "args": asdict(args),
        "torch_threads": torch.get_num_threads(),
        "generated_tokens": tokens,
        "seconds": seconds,
        "median_s": medians,
        "tokens_per_s": {path: tokens / median for path, median in medians.items()},
        "ms_per_step": {path: 1000 * median / steps for path, median in medians.items()},
        "speedup": medians["peft"] / medians["slices"],
        "same_completions": True,
    }
    write_results(f"mixed_batch_{args.model}", record)
    print(
        f"| path | s per joint sampling (median of {args.repeats}) | each | ms per step | tokens/s |"
    )
    print("|---|---:|---|---:|---:|")
    for path, label in (("peft", "peft's adapter_names"), ("slices", "by slices")):
        each = ", ".join(f"{s:.2f}" for s in seconds[path])
        print(f"| {label} | {medians[path]:.2f} | {each} | {record['ms_per_step'][path]:.1f} | "
              f"{record['tokens_per_s'][path]:,.0f} |")  # fmt: skip
    print(f"speed-up {record['speedup']:.2f}x; the same completions on both paths in every repeat")


if __name__ == "__main__":
    main(tyro.cli(Args))
