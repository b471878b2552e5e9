"""Joint sampling of two agents' adapters on one base, the three routes of
:mod:`agents.trainable_lm.mixed` (peft's ``adapter_names`` path, slices, stacked), on the
CPU, in one process, interleaved.

Two models:

- ``smollm2``: SmolLM2-135M-Instruct as the learners load it (float32, LoRA rank 8 on
  q/k/v/o of two agents), the table's workload;
- ``narrow-qwen``: Qwen2.5-1.5B's layout (28 blocks, LoRA rank 16 on all 7 linear layers
  of each: 196 LoRA layers) at width 64, random weights: almost no arithmetic, so a step's
  time is its fixed cost (Python and dispatch), the part a GPU does not hide.

Both agents get ``prompts`` prompts x G samples, ``new_tokens`` tokens each (exactly:
``min_new_tokens``), sampled at temperature 1. The adapters are moved apart at random
first (LoRA's B starts at 0). Every repeat checks that slices sampled peft's completions,
token for token and log-probability for log-probability, and records how far the stacked
route's are from them (rounding: the tokens that differ, the largest log-probability
difference)::

    python benchmarks/mixed_batch.py --model smollm2
    python benchmarks/mixed_batch.py --model narrow-qwen --prompts 1 --group-size 1

Writes ``benchmarks/results/mixed_batch_<model>.json`` (:func:`results.write_results`).
"""

from __future__ import annotations

import collections
import statistics
import time
from collections.abc import Sequence
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
    word_tokenizer,
)
from results import write_results
from torch.utils._python_dispatch import TorchDispatchMode

from agents.trainable_lm import TrainableLM
from agents.trainable_lm.mixed import routed_adapters
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


ROUTES = ("peft", "slices", "stacked")
"""The routes timed (:func:`agents.trainable_lm.mixed.routed_adapters`), peft's first."""


def timed_sampling(lm: TrainableLM, requests: dict, new_tokens: int, routing: str) -> tuple[float, dict]:
    """Seconds of one joint sampling through ``routing``, and its completions."""
    lm.routing = routing
    started = time.perf_counter()
    joint = lm.sample_joint(requests, max_new_tokens=new_tokens, min_new_tokens=new_tokens, temperature=1.0)
    return time.perf_counter() - started, joint


class OperatorCount(TorchDispatchMode):
    """Counts the compute operators run in the block, by name (views and other metadata
    operators left out): what a device launches, one kernel or more each."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket not in METADATA:
            self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


METADATA = {torch.ops.aten.view, torch.ops.aten.t, torch.ops.aten.slice, torch.ops.aten.alias,
            torch.ops.aten._unsafe_view, torch.ops.aten.unsqueeze, torch.ops.aten.transpose,
            torch.ops.aten.expand, torch.ops.aten.detach, torch.ops.aten.reshape}  # fmt: skip


def operators_per_step(lm: TrainableLM, routing: str, agents: Sequence[str], prompt: Sequence[int]) -> int:
    """Compute operators of one forward call of one token per row, a row per agent of
    ``agents`` (a decoded token's forward pass, without the cache)."""
    model = lm.seats[agents[0]].model
    ids = torch.tensor([list(prompt)] * len(agents), device=lm.device)
    with torch.no_grad(), routed_adapters(model, routing) as route:
        keywords = route(list(agents))
        with OperatorCount() as count:
            model(input_ids=ids, **keywords)
    return sum(count.counts.values())


def differences(joint: dict, reference: dict) -> dict[str, float]:
    """How far ``joint``'s completions are from ``reference``'s: tokens that differ (a
    position past the shorter's end counts), and the largest log-probability difference
    where the tokens agree so far."""
    tokens = logprob = 0.0
    for agent, completions in reference.items():
        for got, expected in zip(joint[agent], completions, strict=True):
            mine, theirs = got.token_ids, expected.token_ids  # of other lengths where one stopped elsewhere
            tokens += sum(a != b for a, b in zip(mine, theirs)) + abs(len(mine) - len(theirs))
            for a, b, x, y in zip(mine, theirs, got.logprobs, expected.logprobs):
                if a != b:
                    break
                logprob = max(logprob, abs(x - y))
    return {"differing_tokens": tokens, "max_logprob_difference": logprob}


def main(args: Args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    lm, requests = build(args)
    tokens = len(AGENTS) * args.prompts * args.group_size * args.new_tokens
    seconds: dict[str, list[float]] = {route: [] for route in ROUTES}
    against_peft: dict[str, dict[str, float]] = {}
    for repeat in range(args.repeats + 1):
        outputs = {}
        order = ROUTES[repeat % len(ROUTES) :] + ROUTES[: repeat % len(ROUTES)]
        for route in order:
            elapsed, outputs[route] = timed_sampling(lm, requests, args.new_tokens, route)
            if repeat:  # the first round warms up
                seconds[route].append(elapsed)
        if outputs["slices"] != outputs["peft"]:
            raise SystemExit("slices sampled other completions than peft's path")
        found = differences(outputs["stacked"], outputs["peft"])
        against_peft = {key: max(value, against_peft.get(key, 0.0)) for key, value in found.items()}
    medians = {route: statistics.median(times) for route, times in seconds.items()}
    steps = args.new_tokens
    operators = {route: operators_per_step(lm, route, AGENTS, [0]) for route in ROUTES}
    record = {
        "args": asdict(args),
        "torch_threads": torch.get_num_threads(),
        "generated_tokens": tokens,
        "seconds": seconds,
        "median_s": medians,
        "tokens_per_s": {route: tokens / median for route, median in medians.items()},
        "ms_per_step": {route: 1000 * median / steps for route, median in medians.items()},
        "speedup_over_peft": {route: medians["peft"] / median for route, median in medians.items()},
        "slices_same_completions_as_peft": True,
        "stacked_against_peft": against_peft,
        "operators_per_step_one_row_per_agent": operators,
    }
    write_results(f"mixed_batch_{args.model}", record)
    print(f"| route | s per joint sampling (median of {args.repeats}) | each | ms per step | tokens/s | speed-up | "
          "operators per step, one row per agent |")  # fmt: skip
    print("|---|---:|---|---:|---:|---:|---:|")
    for route, label in (("peft", "peft's adapter_names"), ("slices", "by slices"), ("stacked", "stacked")):
        each = ", ".join(f"{s:.2f}" for s in seconds[route])
        print(f"| {label} | {medians[route]:.2f} | {each} | {record['ms_per_step'][route]:.1f} | "
              f"{record['tokens_per_s'][route]:,.0f} | {record['speedup_over_peft'][route]:.2f}x | {operators[route]:,} |")  # fmt: skip
    print("slices: the same completions as peft's path in every repeat; stacked against peft's path: "
          f"{against_peft['differing_tokens']:.0f} tokens differ at most, log-probabilities by at most "
          f"{against_peft['max_logprob_difference']:.1e}")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(Args))
