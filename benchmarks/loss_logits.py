"""The loss's largest tensor: scoring the chosen tokens from a micro-batch's logits, the
way of release 0.2 (``log_softmax(logits.float() / T).gather(...)``) against
:func:`agents.trainable_lm.token_logprobs.token_logprobs`, in float32 and bfloat16.

For each, the bytes kept for the backward pass (counted by
``torch.autograd.graph.saved_tensors_hooks``, the same on any device) and the seconds of
the forward and backward passes on this machine (median of ``repeats``, the two ways
interleaved)::

    python benchmarks/loss_logits.py                  # SmolLM2's vocabulary, 8 x 128 positions
    python benchmarks/loss_logits.py --vocabulary 151936 --positions 256   # Qwen2.5's

Writes ``benchmarks/results/loss_logits_<vocabulary>.json``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch
import tyro
from results import write_results

from agents.trainable_lm.token_logprobs import token_logprobs


@dataclass
class Args:
    vocabulary: int = 49152
    """V: SmolLM2's 49,152; Qwen2.5's 151,936."""
    rows: int = 8
    """Sequences in the micro-batch."""
    positions: int = 128
    """Completion tokens per sequence."""
    temperature: float = 0.7
    repeats: int = 5
    threads: int = 2


def release_0_2(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """The scoring of release 0.2."""
    return torch.log_softmax(logits.float() / temperature, dim=-1).gather(-1, targets[..., None])[..., 0]


def with_entropy(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """:func:`token_logprobs` as a trained pass calls it: its backward pass also computes each
    position's entropy (``losses/entropy``)."""
    return token_logprobs(logits, targets, temperature, torch.empty(targets.shape))


WAYS = {
    "log_softmax of a float32 copy (0.2)": release_0_2,
    "token_logprobs": token_logprobs,
    "token_logprobs with the entropy": with_entropy,
}


def kept_bytes(way, logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> int:
    """Bytes the autograd graph keeps for the backward pass (a tensor kept twice counted once)."""
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        way(logits, targets, temperature)
    return sum(kept.values())


def main(args: Args) -> None:
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    shape = (args.rows, args.positions, args.vocabulary)
    targets = torch.randint(0, args.vocabulary, shape[:2], generator=generator)
    record: dict = {"args": asdict(args), "kept_mib": {}, "median_s": {}}
    print(f"| logits | way | kept for the backward pass (MiB) | forward + backward, s (median of {args.repeats}) |")
    print("|---|---|---:|---:|")
    for dtype in (torch.float32, torch.bfloat16):
        logits = (3 * torch.randn(shape, generator=generator)).to(dtype)
        seconds: dict[str, list[float]] = {name: [] for name in WAYS}
        for _ in range(args.repeats):
            for name, way in WAYS.items():
                leaf = logits.clone().requires_grad_()
                started = time.perf_counter()
                way(leaf, targets, args.temperature).sum().backward()
                seconds[name].append(time.perf_counter() - started)
        for name, way in WAYS.items():
            mib = kept_bytes(way, logits.clone().requires_grad_(), targets, args.temperature) / 2**20
            median = statistics.median(seconds[name])
            key = f"{str(dtype).removeprefix('torch.')}: {name}"
            record["kept_mib"][key], record["median_s"][key] = mib, median
            print(f"| {str(dtype).removeprefix('torch.')} | {name} | {mib:,.0f} | {median:.3f} |")
    write_results(f"loss_logits_{args.vocabulary}", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
