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

With ``--no-exact-lengths`` each completion stops where the model stops (rows finish at
different steps), written as ``decoding_<model>_natural.json``; tokens/s then counts the
tokens the dynamic way generated, and ms per step divides by the longest completion::

    python benchmarks/decoding.py --model smollm2 --no-exact-lengths --new-tokens 96 --ways dynamic static

Writes ``benchmarks/results/decoding_<model>.json`` (:func:`results.write_results`). The
compiled way compiles the device's default scope (:func:`agents.trainable_lm.steps.compile_scope`:
one decoder layer on the CPU); ``DELIBERATION_COMPILE_SCOPE=step`` (or ``layers``) chooses it,
and the file is then ``decoding_<model>_<scope>.json``. Compile seconds are cold only with
``TORCHINDUCTOR_CACHE_DIR`` set to a fresh folder::

    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) DELIBERATION_COMPILE_SCOPE=step \
        python benchmarks/decoding.py --model smollm2 --ways dynamic compiled
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass

import torch
import tyro
from mixed_batch import Args, build, differences
from results import write_results

from agents.devices import Decoding
from agents.trainable_lm.steps import SCOPE_VARIABLE, compile_scope

WAYS = ("dynamic", "static", "compiled")


@dataclass
class DecodingArgs(Args):
    ways: tuple[Decoding, ...] = WAYS
    """The ways timed, ``dynamic`` first (the others are compared with it)."""
    exact_lengths: bool = True
    """Every completion exactly ``new_tokens`` long; ``--no-exact-lengths``: each stops where
    the model stops, so rows finish at different steps (the dynamic way drops them, the
    static ways move the live ones into smaller buckets)."""


def timed(lm, requests: dict, args: DecodingArgs, decoding: str) -> tuple[float, dict]:
    """Seconds of one joint sampling decoded ``decoding``'s way, and its completions."""
    lm.decoding = decoding
    least = args.new_tokens if args.exact_lengths else 0
    started = time.perf_counter()
    joint = lm.sample_joint(requests, max_new_tokens=args.new_tokens, min_new_tokens=least, temperature=1.0)
    return time.perf_counter() - started, joint


def main(args: DecodingArgs) -> None:
    if args.ways[0] != "dynamic":
        raise SystemExit("--ways must start with dynamic (the others are compared with it)")
    if args.threads:
        torch.set_num_threads(args.threads)
    lm, requests = build(args)
    lm.routing = "stacked"
    ways = args.ways
    first: dict[str, float] = {}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    against: dict[str, dict[str, float]] = {way: {} for way in ways}
    for repeat in range(args.repeats + 1):
        outputs = {}
        order = ways[repeat % len(ways) :] + ways[: repeat % len(ways)]
        for way in order:
            elapsed, outputs[way] = timed(lm, requests, args, way)
            if repeat:
                seconds[way].append(elapsed)
            else:
                first[way] = elapsed
                print(f"{way}: first call {elapsed:.1f} s", flush=True)
        for way in ways:
            found = differences(outputs[way], outputs["dynamic"])
            against[way] = {key: max(value, against[way].get(key, 0.0)) for key, value in found.items()}
    medians = {way: statistics.median(times) for way, times in seconds.items()}
    tokens = sum(len(c.token_ids) for completions in outputs["dynamic"].values() for c in completions)
    steps = max(len(c.token_ids) for completions in outputs["dynamic"].values() for c in completions)
    record = {
        "args": asdict(args),
        "routing": "stacked",
        "compile_scope": compile_scope(torch.device(lm.device)),
        "torch_threads": torch.get_num_threads(),
        "generated_tokens": tokens,
        "first_call_s": first,
        "seconds": seconds,
        "median_s": medians,
        "ms_per_step": {way: 1000 * median / steps for way, median in medians.items()},
        "tokens_per_s": {way: tokens / median for way, median in medians.items()},
        "speedup_over_dynamic": {way: medians["dynamic"] / median for way, median in medians.items()},
        "against_dynamic": against,
    }
    scope = f"_{os.environ[SCOPE_VARIABLE]}" if os.environ.get(SCOPE_VARIABLE) else ""
    write_results(f"decoding_{args.model}" + ("" if args.exact_lengths else "_natural") + scope, record)
    print(f"| decoding | first call (s) | s per joint sampling (median of {args.repeats}) | ms per step | tokens/s | "
          "speed-up | tokens differing from dynamic | largest log-prob difference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for way in ways:
        print(f"| {way} | {first[way]:.1f} | {medians[way]:.3f} | {record['ms_per_step'][way]:.1f} | "
              f"{record['tokens_per_s'][way]:,.0f} | {record['speedup_over_dynamic'][way]:.2f}x | "
              f"{against[way]['differing_tokens']:.0f} | {against[way]['max_logprob_difference']:.1e} |")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(DecodingArgs))
