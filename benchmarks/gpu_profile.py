"""Where the GPU check's update spends its time (issue 32): ``torch.profiler`` over one
decoding step of the update's batch and one micro-batch of its loss pass, on
:mod:`gpu_check`'s model (two agents on a random-weight model of Qwen2.5-1.5B's shape,
bfloat16, LoRA rank 16 on every linear layer, 32 prompts x G = 8 of 512 tokens per agent).

A decoding step that is launch-bound shows a device time far below its host time; the
loss pass's kernels, by device time, show what keeps its MFU where it is. It reports, for
each, the wall seconds, the device and host time the profiler saw, and the operators
that took the most device time (host time where there is no device), with their counts.

    python benchmarks/gpu_profile.py            # on a GPU
    python benchmarks/gpu_profile.py --smoke    # a tiny model on the CPU in seconds

Writes ``benchmarks/results/gpu_profile.json`` (not with ``--smoke``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import torch
import tyro
from gpu_check import AGENTS, SHAPES, SMOKE_SHAPE, Args, build_team, checked, requests
from results import write_results

from agents.devices import synchronize
from agents.trainable_lm.mixed import routed_adapters
from agents.trainable_lm.steps import DynamicSteps
from algorithms.text.losses import text_policy_loss, token_weights

TOP = 25
"""Operators listed per profile."""


@dataclass
class ProfileArgs:
    prompts: int = 32
    """Prompts per agent (G samples each, as :mod:`gpu_check`)."""
    micro_batch_size: int = 32
    """Sequences of the profiled loss micro-batch."""
    smoke: bool = False
    """A tiny model on the CPU: runs in seconds."""


def operators(profile: Any, device: bool) -> list[dict[str, Any]]:
    """The :data:`TOP` operators by device time (``device``) or host time, self time only."""
    key = "self_device_time_total" if device else "self_cpu_time_total"
    rows = sorted(profile.key_averages(), key=lambda event: getattr(event, key, 0.0), reverse=True)
    return [
        {
            "name": event.key,
            "count": event.count,
            "self_device_ms": getattr(event, "self_device_time_total", 0.0) / 1000,
            "self_host_ms": event.self_cpu_time_total / 1000,
        }
        for event in rows[:TOP]
    ]


def profiled(work: Any, device: torch.device) -> dict[str, Any]:
    """``work()`` once under the profiler: wall seconds, total device and host self time, top operators."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    synchronize(device)
    started = time.perf_counter()
    with profile(activities=activities) as prof:
        work()
        synchronize(device)
    wall = time.perf_counter() - started
    events = prof.key_averages()
    return {
        "wall_s": wall,
        "device_ms": sum(getattr(e, "self_device_time_total", 0.0) for e in events) / 1000,
        "host_ms": sum(e.self_cpu_time_total for e in events) / 1000,
        "operators": operators(prof, device.type == "cuda"),
    }


def main(args: ProfileArgs) -> None:
    check = checked(
        Args(smoke=args.smoke, prompts=args.prompts, micro_batch_size=args.micro_batch_size)
    )
    shape = SMOKE_SHAPE if args.smoke else SHAPES[check.shape]
    lm = build_team(check, shape)
    batch = requests(check, shape["vocab_size"])
    joint = lm.sample_joint(batch, max_new_tokens=4, min_new_tokens=4, temperature=1.0)  # warm-up
    model = lm.seats[AGENTS[0]].model
    rows = [(agent, lm.encode(chat)) for agent, (chats, _) in batch.items() for chat in chats]
    record: dict[str, Any] = {"args": dataclasses.asdict(args), "shape": shape, "rows": len(rows)}

    with torch.no_grad(), routed_adapters(model, "auto") as route:
        steps = DynamicSteps(
            model, [p for _, p in rows], lm._pad_id, lm.device, [a for a, _ in rows], route
        )
        live = list(range(len(rows)))
        chosen = steps.logits.argmax(dim=-1)
        for _ in range(2):  # warm-up of the step's kernels at this cache length
            chosen = steps.step(chosen, live).argmax(dim=-1)
        record["decode_step"] = profiled(lambda: steps.step(chosen, live), lm.device)
    print(f"decode step, {len(rows)} rows: {record['decode_step']['wall_s'] * 1000:.1f} ms wall, "
          f"device {record['decode_step']['device_ms']:.1f} ms, host {record['decode_step']['host_ms']:.1f} ms")  # fmt: skip

    agent = AGENTS[0]
    block = joint[agent][: args.micro_batch_size if not args.smoke else 4]
    lengths = torch.tensor([len(c.token_ids) for c in block])

    def loss_pass() -> None:
        logp, mask = lm.logprobs(agent, [c.prompt_ids for c in block], [c.token_ids for c in block])
        advantages = torch.linspace(-1, 1, len(block), device=logp.device)
        weights = token_weights(lengths, "token").to(logp.device)
        loss, _ = text_policy_loss(
            logp, logp.detach(), None, advantages, mask, weights, clip_eps=0.2, kl_coef=0.0
        )
        loss.backward()

    loss_pass()  # warm-up
    record["loss_micro_batch"] = profiled(loss_pass, lm.device)
    print(f"loss micro-batch of {len(block)}: {record['loss_micro_batch']['wall_s'] * 1000:.1f} ms wall, "
          f"device {record['loss_micro_batch']['device_ms']:.1f} ms, host {record['loss_micro_batch']['host_ms']:.1f} ms")  # fmt: skip
    for part in ("decode_step", "loss_micro_batch"):
        print(f"\n{part}: top operators")
        for row in record[part]["operators"][:12]:
            print(
                f"  {row['self_device_ms']:9.2f} ms device {row['self_host_ms']:9.2f} ms host x{row['count']:<5d} {row['name']}"
            )
    if not args.smoke:
        write_results("gpu_profile", record)


if __name__ == "__main__":
    main(tyro.cli(ProfileArgs))
