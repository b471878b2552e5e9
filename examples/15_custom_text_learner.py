"""15: your own optimizer on the text seat (LoRA per agent), compared with GRPO.

``RLOO`` is REINFORCE with a leave-one-out baseline and no division by the group's
standard deviation: A_g = s (R_g - mean of the group's other G - 1 returns). It subclasses
the shipped ``TextGRPO`` and overrides the skeleton's methods
(:class:`algorithms.text.base.TextPolicyGradientLearner`), each for one thing:

- ``compute_advantages(returns)``: (B, G, n) returns of one turn -> advantages, the same shape;
- ``policy_loss(...)``: the loss of one forward pass (here plain REINFORCE, no clip, no KL);
- ``update_metrics(...)``: the update's metrics, plus its own (``adv/loo_baseline``);
- ``state_dict()`` / ``restore(state)``: its own state in the checkpoint, so ``--resume``
  continues exactly (``returns_ema``, a running mean it logs).

Its settings are a config of its own, ``RLOOConfig``, a dataclass derived from the shipped
``TextGRPOConfig`` (``config_class``): the field ``loo_scale`` is recorded in the run's
``config.json`` and checked on resume, and a comparison builds an ``RLOOConfig`` for it
(the shared settings, GRPO's own, and ``loo_scale`` at its default). ``summary_metrics``
names its own metrics for the comparison's table.

The reward is one the tiny random model can earn (the share of its text that is lowercase
letters, as in example 14), so its curves move; with ``--model tiny`` on a real task the
rewards come from luck. From Python::

    python examples/15_custom_text_learner.py --updates 2

From the command line, the same comparison, and RLOO alone (``--loo-scale`` is its own option)::

    deliberate compare text --algos grpo ./examples/15_custom_text_learner.py:RLOO \\
        --protocol ./examples/15_custom_text_learner.py:protocol --model tiny --updates 2 --seeds 1
    deliberate train text ./examples/15_custom_text_learner.py:RLOO \\
        --protocol ./examples/15_custom_text_learner.py:protocol --model tiny --updates 2 --loo-scale 2

Runtime: two updates of each learner, one seed, about 20 s on 2 busy CPU cores.
"""

import argparse
from dataclasses import dataclass

import torch

from algorithms.text import TextGRPO, TextGRPOConfig, TextLearnerConfig
from algorithms.text.compare import TextCompare, compare, compare_table
from algorithms.text.config import text_run
from deliberation_env.tasks import Problem
from deliberation_env.text import TextEnvConfig
from deliberation_env.text.protocols import FunctionProtocol

LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
PROBLEMS = {
    split: [Problem(f"{split}-{k}", f"Write {k} words.", "") for k in range(4)]
    for split in ("train", "test")
}


def letters_share(problem: Problem, texts: list[str]) -> float:
    """The joint reward: the mean over the agents of their texts' share of lowercase letters."""
    return sum(sum(ch in LETTERS for ch in text) / max(len(text), 1) for text in texts) / len(texts)


protocol = FunctionProtocol(PROBLEMS, prompt=lambda problem, *_: problem.question, reward=letters_share, n_agents=2,
                            name="letters", play_cut=True)  # fmt: skip


@dataclass
class RLOOConfig(TextGRPOConfig):
    """GRPO's settings, and RLOO's own."""

    loo_scale: float = 1.0
    """s: the advantage is s times the return minus the leave-one-out mean."""


class RLOO(TextGRPO):
    """REINFORCE with a leave-one-out baseline, no standard deviation (the module docstring)."""

    name = "rloo"
    config_class = RLOOConfig
    summary_metrics = ("adv/loo_baseline", "returns/ema")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.returns_ema = 0.0  # its own state: saved in the checkpoint, restored on --resume
        self._baseline = 0.0

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        """(B, G, n) -> (B, G, n): each return minus the mean of its group's other G - 1."""
        group = returns.shape[1]
        baseline = (returns.sum(1, keepdim=True) - returns) / (group - 1)
        self._baseline = float(baseline.mean())
        return self.config.loo_scale * (returns - baseline)

    def policy_loss(self, logp, old_logp, ref_logp, advantages, mask, weights, stat_weights):
        """Plain REINFORCE, -A log pi per token, weighted as the shipped loss (no clip, no KL)."""
        per_sequence = (advantages[:, None] * logp * mask).sum(1)
        loss = -(weights * per_sequence).sum()
        return loss, {"policy": loss.detach()}

    def update_metrics(self, returns, advantages, samples, seconds):
        """The skeleton's metrics, and RLOO's own."""
        self.returns_ema = 0.9 * self.returns_ema + 0.1 * float(returns.mean())
        own = {"adv/loo_baseline": self._baseline, "returns/ema": self.returns_ema}
        return {**super().update_metrics(returns, advantages, samples, seconds), **own}

    def state_dict(self):
        return {**super().state_dict(), "returns_ema": self.returns_ema}

    def restore(self, state):
        super().restore(state)
        self.returns_ema = float(state["returns_ema"])


def main(updates: int, seeds: int, out_dir: str = "") -> dict:
    shared = TextLearnerConfig(
        env=TextEnvConfig(protocol=protocol), run=text_run(updates=updates, eval_problems=4, progress=False),
        model="tiny", groups_per_update=2, group_size=4, max_new_tokens=8, temperature=1.0, learning_rate=1e-3,
    )  # fmt: skip
    cfg = TextCompare(learner=shared, algos=("grpo", "rloo"), seeds=seeds, out_dir=out_dir)
    summary = compare(cfg, learners={"rloo": RLOO})
    from rich.console import Console

    Console().print(compare_table(summary, cfg))
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--out-dir", default="")
    args = parser.parse_args()
    main(args.updates, args.seeds, args.out_dir)
