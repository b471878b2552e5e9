"""11: TorchRL multi-agent PPO (IPPO with a centralized critic: MAPPO) on the env.

TorchRL takes a PettingZoo parallel env through its own ``PettingZooWrapper``, which
groups ``agent_0 .. agent_{n-1}`` as ``"agent"`` and stacks their data. The env needs two
of its documented options for that: ``observation="flat"`` (one Box per agent; TorchRL's
``Composite`` also clashes with the Dict's key ``"self"``) and ``infos="numeric"`` (the
wrapper makes every info value a tensor; text and nested dicts cannot be).

The rest is TorchRL's own multi-agent PPO recipe: a shared ``MultiAgentMLP`` actor, a
centralized critic, a collector, GAE and ``ClipPPOLoss``. The trained actor is then
evaluated greedily on held-out problems with :func:`algorithms.meta.evaluate.evaluate`.
Needs the ``integrations`` extra.

Why the held-out accuracy hardly moves: with seed 0 the untrained actor's greedy action is
REFINE for every observation, which is the debate baseline (0.955 on the 200 held-out
problems), and even the privileged oracle gets 0.98 there: training can gain at most 5 of
200 problems over the untrained actor on this simulated team.

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): the
defaults ran over 10 minutes (16 of 20 iterations done when stopped, the machine heavily
loaded); the tests' settings (``--iterations 2 --eval-problems 8 --frames-per-batch 24
--minibatch-size 12 --epochs 1``) take about 11 s.

    python examples/11_torchrl.py [--iterations 20] [--frames-per-batch 480]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import tyro
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type
from torchrl.modules import MultiAgentMLP, ProbabilisticActor
from torchrl.objectives import ClipPPOLoss, ValueEstimators

import deliberation_env as de
from algorithms.meta.evaluate import evaluate


@dataclass
class Args:
    iterations: int = 20
    """PPO iterations (collect a batch, then train on it)."""
    frames_per_batch: int = 480
    """Env steps collected per iteration (each step is one round of the whole team)."""
    epochs: int = 4
    """Passes over each batch."""
    minibatch_size: int = 120
    """Env steps per optimizer step."""
    eval_problems: int = 200
    """Held-out problems to evaluate on."""
    seed: int = 0
    """Seed of the env, the networks and the evaluation."""


ENV_KWARGS = {"task": "arithmetic", "team": "simulated", "n_agents": 3, "max_rounds": 3, "observation": "flat"}
GROUP = "agent"
"""TorchRL's name for the group of agent_0 .. agent_{n-1}."""


class TorchRLPolicy:
    """A TorchRL actor as a package :class:`~algorithms.meta.policy.Policy` (its mode: greedy)."""

    name = "mappo (torchrl)"

    def __init__(self, actor: ProbabilisticActor):
        self.actor = actor

    def act(self, obs, infos):
        agents = sorted(obs)
        observation = torch.as_tensor(np.stack([obs[a] for a in agents], axis=1))  # (num_envs, n_agents, d)
        batch = TensorDict({(GROUP, "observation"): observation}, batch_size=observation.shape[:1])
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            actions = self.actor(batch)[GROUP, "action"].numpy()
        return {agent: actions[:, k] for k, agent in enumerate(agents)}


def make_env(seed: int) -> PettingZooWrapper:
    """The env through TorchRL's wrapper, with integer (categorical) actions."""
    return PettingZooWrapper(
        de.parallel_env(**ENV_KWARGS, infos="numeric"), categorical_actions=True, return_state=True, seed=seed
    )


def make_actor_and_critic(env: PettingZooWrapper) -> tuple[ProbabilisticActor, TensorDictModule]:
    """A parameter-shared actor (each agent sees its own observation) and a centralized critic."""
    n_agents = len(env.group_map[GROUP])
    n_features = env.observation_spec[GROUP, "observation"].shape[-1]
    n_actions = env.full_action_spec[GROUP, "action"].space.n

    def mlp(n_outputs: int, centralised: bool) -> MultiAgentMLP:
        return MultiAgentMLP(n_features, n_outputs, n_agents, centralised=centralised, share_params=True,
                             depth=2, num_cells=64, activation_class=nn.Tanh)

    logits = TensorDictModule(mlp(n_actions, False), in_keys=[(GROUP, "observation")], out_keys=[(GROUP, "logits")])
    actor = ProbabilisticActor(
        logits, spec=env.full_action_spec[GROUP, "action"], in_keys={"logits": (GROUP, "logits")},
        out_keys=[(GROUP, "action")], distribution_class=torch.distributions.Categorical, return_log_prob=True,
        log_prob_key=(GROUP, "sample_log_prob"),
    )
    critic = TensorDictModule(mlp(1, True), in_keys=[(GROUP, "observation")], out_keys=[(GROUP, "state_value")])
    return actor, critic


def held_out_accuracy(actor: ProbabilisticActor, args: Args) -> float:
    """Share of held-out problems whose final consensus is correct, greedy actions."""
    venv = de.vector_env(min(args.eval_problems, 256), split="test", **ENV_KWARGS)
    return evaluate(TorchRLPolicy(actor), venv, range(args.eval_problems), args.seed, progress=False).accuracy


def main(args: Args) -> float:
    torch.manual_seed(args.seed)
    env = make_env(args.seed)
    check_env_specs(env, seed=args.seed)  # TorchRL's own check of the wrapped env
    actor, critic = make_actor_and_critic(env)
    loss = ClipPPOLoss(actor_network=actor, critic_network=critic, clip_epsilon=0.2, entropy_coeff=0.01)
    loss.set_keys(reward=env.reward_key, action=env.action_key, sample_log_prob=(GROUP, "sample_log_prob"),
                  value=(GROUP, "state_value"), done=(GROUP, "done"), terminated=(GROUP, "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=1.0, lmbda=0.95)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-4)
    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch,
                          total_frames=args.frames_per_batch * args.iterations)
    buffer = ReplayBuffer(storage=LazyTensorStorage(args.frames_per_batch), sampler=SamplerWithoutReplacement(),
                          batch_size=args.minibatch_size)

    untrained = held_out_accuracy(actor, args)
    for iteration, batch in enumerate(collector):
        with torch.no_grad():
            loss.value_estimator(batch, params=loss.critic_network_params, target_params=loss.target_critic_network_params)
        buffer.extend(batch.reshape(-1))
        for _ in range(args.epochs * (args.frames_per_batch // args.minibatch_size)):
            parts = loss(buffer.sample())
            total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
            total.backward()
            nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
        collector.update_policy_weights_()
        finished = batch["next", GROUP, "done"].squeeze(-1).any(-1)  # (frames,): steps that end an episode
        team_reward = batch["next", GROUP, "info", "team_reward"][finished, 0].mean().item()  # agent 0's copy
        print(f"iteration {iteration + 1}: {batch.numel()} env steps, training team reward {team_reward:.3f}")
    collector.shutdown()
    accuracy = held_out_accuracy(actor, args)
    print(f"held-out consensus accuracy: untrained {untrained:.3f}, after PPO {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main(tyro.cli(Args))
