"""14: learning you can watch in a minute: a tiny random model learns a reward it can reach.

The tiny model (``--model tiny``) writes random bytes, so on the built-in tasks its rewards
come from luck and a smoke run shows the wiring, not learning. This task's reward is one it
can earn: the share of a completion's characters that are lowercase letters (about 0.1 at
random). GRPO with full fine-tuning lifts it towards 1 in about 20 updates, so this is the
check that a setup learns end to end (rollouts, rewards, advantages, loss, optimizer,
sampling from the new weights) before a run that costs GPU hours.

    python examples/14_tiny_learns.py [--updates 20]

The protocol is importable, so the command line trains on it too (``--protocol`` takes a
``.py`` file's ``path:attribute``)::

    deliberate train text grpo --protocol ./examples/14_tiny_learns.py:protocol --model tiny \\
        --finetune full --learning-rate 1e-2 --group-size 8 --max-new-tokens 8 --temperature 1 --updates 20

Full fine-tuning, not LoRA: the tiny model's last norm bounds how far its logits can move
from the hidden states (about 0.6 apart at its initialisation scale), so adapters on its
layers cannot push the letters' share past about 0.12; full fine-tuning moves the output
layer itself.

Runtime: 59 s for 20 updates on 2 CPU cores (2026-11-30, Intel Xeon, beside other work);
the letters' share went from 0.13 to 0.93.
"""

import argparse

import deliberation_env as de
from algorithms.text import TextGRPOConfig, train
from algorithms.text.config import text_run
from deliberation_env.tasks import Problem
from deliberation_env.text.protocols import FunctionProtocol

LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
REQUESTS = ("Write a word.", "Write some letters.", "Write in lowercase.", "Write anything.")
PROBLEMS = {
    split: [Problem(f"{split}-{k}", request, "") for k, request in enumerate(REQUESTS)] for split in ("train", "test")
}


def prompt(problem: Problem, agent: int, previous: str | None, feedback: str | None) -> str:
    return problem.question


def letters_share(problem: Problem, texts: list[str]) -> float:
    """The joint reward: the mean over the agents of their texts' share of lowercase letters."""
    return sum(sum(ch in LETTERS for ch in text) / max(len(text), 1) for text in texts) / len(texts)


# play_cut: the tiny model never stops within 8 tokens, and its cut completions are its answers here
protocol = FunctionProtocol(PROBLEMS, prompt=prompt, reward=letters_share, n_agents=2, name="letters", play_cut=True)


def main(updates: int) -> None:
    config = TextGRPOConfig(
        env=de.TextEnvConfig(protocol=protocol), run=text_run(updates=updates), model="tiny", finetune="full",
        learning_rate=1e-2, groups_per_update=4, group_size=8, max_new_tokens=8, temperature=1.0,
    )  # fmt: skip
    result = train(config)
    shares = [metrics["rewards/joint/mean"] for metrics in result.history]
    for update, share in enumerate(shares, start=1):
        print(f"update {update}: share of lowercase letters {share:.3f}")
    print(f"from {shares[0]:.3f} to {shares[-1]:.3f} in {len(shares)} updates")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=20)
    main(parser.parse_args().updates)
