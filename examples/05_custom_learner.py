"""05: bring your own algorithm: REINFORCE on the env API, compared with the shipped learners.

A linear-softmax meta-policy shared by all agents reads ``obs[agent]["self"]`` and the peer
rows, samples PERSIST / REFINE / CONCEDE every round of the ``de.vector_env`` it is given,
and follows the REINFORCE gradient of each agent's episode return with the batch mean as
baseline. To join a comparison a learner has the learner skeleton's parts
(:class:`algorithms.core.learner.Learner`: ``train_step`` and the state of its checkpoints)
and ``policy()``, the greedy policy (``name``, ``act``) that ``evaluate`` plays on held-out
problems. ``compare(..., learners={"reinforce": Reinforce})`` then trains it beside SoftRankPO
and GRPO on the same env, problems and budget, with the same table, intervals and figures; on
the command line: ``deliberate compare meta --algos softrankpo grpo examples/05_custom_learner.py:Reinforce``.
Run ``python examples/05_custom_learner.py --updates 3 --seeds 1`` for a quick check.
"""

from dataclasses import dataclass

import numpy as np
import torch
import tyro
from rich.console import Console

import deliberation_env as de
from algorithms.core.config import RunConfig
from algorithms.core.learner import Learner
from algorithms.meta import GRPOConfig, PolicyGradientConfig
from algorithms.meta.compare import CompareConfig, compare, compare_table


class Reinforce(Learner):
    """REINFORCE with the batch mean as baseline, built as the shipped learners are:
    ``Reinforce(config, venv, warm_start)`` (a comparison gives it GRPO's config; it ignores
    the SFT warm start, a network of another shape)."""

    name = "reinforce"
    headline = "rewards/team/mean"

    def __init__(self, config: GRPOConfig, venv, warm_start=None):
        self.config, self.venv, self.update = config, venv, 0
        # its own random states, saved in its checkpoints (torch's global one is not): a resumed run draws the same
        self.rng = np.random.default_rng(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        torch.manual_seed(config.seed)  # the initial weights
        size = len(de.SELF_FEATURES) + 2 * len(de.PEER_FEATURES)
        self.linear = torch.nn.Linear(size, 3)  # one policy for all agents: PERSIST, REFINE, CONCEDE
        self.optimizer = torch.optim.Adam(self.linear.parameters(), lr=0.05)

    def logits(self, obs, agent):
        """An agent's own features, then the mean and the max of its peer rows: any team size."""
        own, peers = obs[agent]["self"], obs[agent]["peers"]
        return self.linear(torch.as_tensor(np.concatenate([own, peers.mean(1), peers.max(1)], axis=1)))

    def act(self, obs, infos):
        """Greedy actions for a batch of envs (what ``evaluate`` calls)."""
        with torch.no_grad():
            return {agent: self.logits(obs, agent).argmax(-1).numpy() for agent in obs}

    def policy(self):
        """The greedy policy a comparison evaluates: this learner (it has ``name`` and ``act``)."""
        return self

    def train_step(self):
        """Play one episode per env, then one gradient step; the update's metrics."""
        venv, agents = self.venv, self.venv.possible_agents
        # problems and episode seeds from the learner's own seeded generator: the same seed,
        # the same episodes (a reset without episode seeds draws fresh ones every run)
        obs, _ = venv.reset(options={"problem_index": self.rng.integers(len(venv.problems), size=venv.num_envs).tolist(),
                                     "episode_seed": self.rng.integers(2**31, size=venv.num_envs).tolist()})
        logp, returns, done = torch.zeros(len(agents), venv.num_envs), np.zeros((len(agents), venv.num_envs)), False
        while not done:
            logps = {agent: torch.log_softmax(self.logits(obs, agent), -1) for agent in agents}
            actions = {a: torch.multinomial(logps[a].exp(), 1, generator=self.generator)[:, 0] for a in agents}
            logp = logp + torch.stack([logps[a].gather(1, actions[a][:, None])[:, 0] for a in agents])
            obs, rewards, terminations, _, infos = venv.step({a: actions[a].numpy() for a in agents})
            returns += np.stack([rewards[agent] for agent in agents])
            done = all(terminations[agent].all() for agent in agents)
        advantages = torch.as_tensor(returns - returns.mean(), dtype=torch.float32)
        loss = -(logp * advantages).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.update += 1
        return {"rewards/team/mean": float(np.mean([info[agents[0]]["team_reward"] for info in infos]))}

    def state_dict(self):
        """Everything a resumed run needs to continue exactly; ``config``: what it must share
        (``Learner.settings``: all but the run part, which may ask for more updates)."""
        return {"algo": self.name, "config": self.settings(self.config), "linear": self.linear.state_dict(),
                "optimizer": self.optimizer.state_dict(), "rng": self.rng.bit_generator.state,
                "generator": self.generator.get_state(), "update": self.update}  # fmt: skip

    def restore(self, state):
        self.linear.load_state_dict(state["linear"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state, self.update = state["rng"], state["update"]
        self.generator.set_state(state["generator"])


@dataclass
class Args:
    updates: int = 20
    """Updates per learner (each plays 64 episodes)."""
    seeds: int = 2
    """Seeds per learner."""
    out_dir: str = ""
    """Where the comparison's files go; ``""``: a new folder under ``runs/compare/``."""


def main(args: Args) -> dict:
    run = RunConfig(updates=args.updates, eval_interval=max(1, args.updates // 4), eval_problems=100)
    template = PolicyGradientConfig(run=run, sft_updates=5, groups_per_update=8, group_size=8)  # one budget for every learner
    cfg = CompareConfig(learner=template, algos=("softrankpo", "grpo", "reinforce"), seeds=args.seeds,
                        baselines=("independent", "oracle"), out_dir=args.out_dir)  # fmt: skip
    summary = compare(cfg, learners={"reinforce": Reinforce})
    Console().print(compare_table(summary, cfg))
    return summary


if __name__ == "__main__":
    main(tyro.cli(Args))
