"""How many weights full fine-tuning moves in float32, in bfloat16 stepping the bfloat16
weights themselves, and in bfloat16 with float32 master weights (``master_weights``,
:class:`algorithms.core.optimizers.MasterWeights`).

Adam's step is about the learning rate; a bfloat16 weight near 1 rounds to steps of 2^-7,
so at a small learning rate most steps of the bfloat16 weights themselves are lost. The
three runs train the same tiny model (``--width``) with GRPO on a reward it can reach (the
share of lowercase letters, ``examples/14_tiny_learns.py``) for ``--updates`` updates at
``--learning-rate``, and count the weights that differ from where they started::

    python benchmarks/master_weights.py --updates 5 --learning-rate 1e-5

Each run samples its own rollouts (bfloat16 decodes other tokens than float32), so the
counts say how many steps reach the weights, not that the runs agree. Writes
``benchmarks/results/master_weights.json``.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
import tyro
from results import write_results

import deliberation_env as de
from agents.trainable_lm import TrainableLM, tiny_model
from algorithms.text import TextGRPOConfig
from algorithms.text.config import text_run
from algorithms.text.learners import TextGRPO
from deliberation_env.text import text_vector_env

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "14_tiny_learns.py"
WAYS = {"float32": ("float32", False), "bfloat16, its own weights": ("bfloat16", False),
        "bfloat16, float32 master weights": ("bfloat16", True)}  # fmt: skip
"""Each run's ``dtype`` and ``master_weights``."""


@dataclass
class Args:
    """The runs' settings."""

    updates: int = 5
    """GRPO updates per run."""
    learning_rate: float = 1e-5
    """Adam's learning rate."""
    width: int = 64
    """The tiny model's hidden size."""


def letters_protocol():
    """The protocol of ``examples/14_tiny_learns.py`` (a reward the tiny model can reach)."""
    spec = importlib.util.spec_from_file_location("tiny_learns", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.protocol


def moved_weights(args: Args, dtype: str, master_weights: bool) -> tuple[int, int]:
    """(weights that moved, weights) after ``args.updates`` updates of one run."""
    protocol = letters_protocol()
    config = TextGRPOConfig(
        env=de.TextEnvConfig(protocol=protocol), run=text_run(progress=False), finetune="full",
        learning_rate=args.learning_rate, groups_per_update=4, group_size=8, max_new_tokens=8, temperature=1.0,
        dtype=dtype, master_weights=master_weights,
    )  # fmt: skip
    model, tokenizer = tiny_model(seed=0, hidden_size=args.width)
    lm = TrainableLM(model, tokenizer, ["agent_0", "agent_1"], finetune="full", dtype=dtype, seed=0)
    venv = text_vector_env(config.num_envs, protocol=protocol, n_agents=2, max_turns=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning that bfloat16's own weights lose steps: measured here
        learner = TextGRPO(config, lm, venv)
    weights = learner._parameters(learner.trainable)
    start = [weight.detach().clone() for weight in weights]
    for _ in range(args.updates):
        learner.train_step()
    moved = sum(int((weight != before).sum()) for weight, before in zip(weights, start, strict=True))
    return moved, sum(weight.numel() for weight in weights)


def main(args: Args) -> None:
    torch.manual_seed(0)
    counts = {}
    for way, (dtype, master_weights) in WAYS.items():
        moved, total = moved_weights(args, dtype, master_weights)
        counts[way] = {"moved": moved, "weights": total}
        print(f"{way:34s} {moved:>9,d} of {total:,d} weights moved")
    write_results("master_weights", {"args": vars(args), "counts": counts})


if __name__ == "__main__":
    main(tyro.cli(Args))
