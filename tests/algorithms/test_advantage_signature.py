"""One ``compute_advantages(returns)`` for both families: the meta learners' advantages are
bit-identical to their advantage functions applied as release 0.1's two-argument
``compute_advantages(returns, team_rewards)`` applied them (MAGRPO's team reward now arrives
through ``returns``)."""

import inspect
from functools import partial

import pytest
import torch

import deliberation_env as de
from algorithms.core.advantages import grpo_advantages, magrpo_advantages, softrank_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.core.learner import GroupPolicyGradient
from algorithms.meta import GRPO, MAGRPO, GRPOConfig, MAGRPOConfig, SoftRankPO, SoftRankPOConfig
from algorithms.meta.base import Rollout

TINY = {"groups_per_update": 3, "group_size": 4, "hidden_size": 16, "num_heads": 2}


def make(cls, config):
    return cls(config, de.vector_env(config.num_envs, task="arithmetic", team="simulated", max_rounds=2))


def earlier_advantages(learner, returns: torch.Tensor, team_rewards: torch.Tensor) -> torch.Tensor:
    """The advantages as the two-argument ``compute_advantages`` of each learner formed them."""
    config = learner.config
    if isinstance(learner, MAGRPO):
        joint = returns.sum(dim=2) if config.joint_return == "sum" else team_rewards
        return magrpo_advantages(joint).unsqueeze(2).expand_as(returns)
    if isinstance(learner, GRPO):
        return per_agent_groups(partial(grpo_advantages, eps=config.eps), returns)
    return per_agent_groups(partial(softrank_advantages, tau=config.tau), returns)


@pytest.fixture(scope="module")
def rollout() -> Rollout:
    """A fixed batch (the same for every learner): returns of varied scale and team rewards."""
    batch = make(GRPO, GRPOConfig(**TINY)).collect()
    generator = torch.Generator().manual_seed(7)
    batch.returns = batch.returns + torch.randn(batch.returns.shape, generator=generator) * 3.7
    batch.team_rewards = torch.randint(0, 2, batch.team_rewards.shape, generator=generator).float()
    return batch


@pytest.mark.parametrize(
    "cls, config",
    [
        (SoftRankPO, SoftRankPOConfig(**TINY)),
        (GRPO, GRPOConfig(**TINY)),
        (MAGRPO, MAGRPOConfig(**TINY)),
        (MAGRPO, MAGRPOConfig(joint_return="team", **TINY)),
    ],
)
def test_advantages_are_bit_identical_to_the_two_argument_signature(cls, config, rollout):
    learner = make(cls, config)
    advantages = learner.group_advantages(rollout, learner.returns(rollout))
    assert torch.equal(advantages, earlier_advantages(learner, rollout.returns, rollout.team_rewards))


def test_the_skeleton_declares_the_one_argument_signature():
    assert "compute_advantages" in GroupPolicyGradient.__abstractmethods__
    for cls in (SoftRankPO, GRPO, MAGRPO):
        assert list(inspect.signature(cls.compute_advantages).parameters) == ["self", "returns"]
