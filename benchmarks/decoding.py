"""The torch sampler's three decoding ways (:mod:`agents.trainable_lm.steps`: ``dynamic``,
``static``, ``compiled``) on one joint sampling of two agents' adapters on one base, in
one process, interleaved, all through the stacked route (so only the decoding differs).

The models and requests are ``benchmarks/mixed_batch.py``'s (``narrow-qwen``: Qwen2.5-1.5B's
28 blocks at width 64, almost no arithmetic, so a step's time is its fixed cost;
``smollm2``: the learners' SmolLM2 pair). The first call of each way is reported apart
(``compiled`` compiles there, once per shape); the timed calls follow, each way in turn.
Every call's completions are compared with ``dynamic``'s of the same round (tokens that
differ, largest log-probability difference)::

    python benchmarks/decoding.py --model narrow-qwen --prompts 1 --group-size 1
    python benchmarks/decoding.py --model smollm2

Writes ``benchmarks/results/decoding_<model>.json`` (:func:`results.write_results`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict

import torch
import tyro
from gpu_check import AGENTS
from mixed_batch import Args, build, differences
from results import write_results

WAYS = ("dynamic", "static", "compiled")


def timed(lm, requests: dict, new_tokens: int, decoding: str) -> tuple[float, dict]:
    """Seconds of one joint sampling decoded ``decoding``'s way, and its completions."""
    lm.decoding = decoding
    started = time.perf_counter()
    joint = lm.sample_joint(requests, max_new_tokens=new_tokens, min_new_tokens=new_tokens, temperature=1.0)
    return time.perf_counter() - started, joint


def main(args: Args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    lm, requests = build(args)
    lm.routing = "stacked"
    tokens = len(AGENTS) * args.prompts * args.group_size * args.new_tokens
    first: dict[str, float] = {}
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    against: dict[str, dict[str, float]] = {way: {} for way in WAYS}
    for repeat in range(args.repeats + 1):
        outputs = {}
        order = WAYS[repeat % len(WAYS) :] + WAYS[: repeat % len(WAYS)]
        for way in order:
            elapsed, outputs[way] = timed(lm, requests, args.new_tokens, way)
            if repeat:
                seconds[way].append(elapsed)
            else:
                first[way] = elapsed
                print(f"{way}: first call {elapsed:.1f} s", flush=True)
        for way in WAYS:
            found = differences(outputs[way], outputs["dynamic"])
            against[way] = {key: max(value, against[way].get(key, 0.0)) for key, value in found.items()}
    medians = {way: statistics.median(times) for way, times in seconds.items()}
    record = {
        "args": asdict(args),
        "routing": "stacked",
        "torch_threads": torch.get_num_threads(),
        "generated_tokens": tokens,
        "first_call_s": first,
        "seconds": seconds,
        "median_s": medians,
        "ms_per_step": {way: 1000 * median / args.new_tokens for way, median in medians.items()},
        "tokens_per_s": {way: tokens / median for way, median in medians.items()},
        "speedup_over_dynamic": {way: medians["dynamic"] / median for way, median in medians.items()},
        "against_dynamic": against,
    }
    write_results(f"decoding_{args.model}", record)
    print(f"| decoding | first call (s) | s per joint sampling (median of {args.repeats}) | ms per step | tokens/s | "
          "speed-up | tokens differing from dynamic | largest log-prob difference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for way in WAYS:
        print(f"| {way} | {first[way]:.1f} | {medians[way]:.3f} | {record['ms_per_step'][way]:.1f} | "
              f"{record['tokens_per_s'][way]:,.0f} | {record['speedup_over_dynamic'][way]:.2f}x | "
              f"{against[way]['differing_tokens']:.0f} | {against[way]['max_logprob_difference']:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(Args))
