"""One ``compute_advantages(returns)`` for both families: the meta learners' advantages are
bit-identical to those of the earlier ``compute_advantages(returns, team_rewards)``, and a
subclass written for that signature still runs, with a DeprecationWarning."""

from functools import partial

import pytest
import torch

import deliberation_env as de
from algorithms.core.advantages import grpo_advantages, magrpo_advantages, softrank_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.core.learner import GroupPolicyGradient
from algorithms.meta import GRPO, MAGRPO, GRPOConfig, MAGRPOConfig, SoftRankPO, SoftRankPOConfig
from algorithms.meta.base import PolicyGradientLearner, Rollout, takes_team_rewards

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
        assert not takes_team_rewards(cls.compute_advantages) and not cls.advantages_take_team_rewards


def test_a_two_argument_subclass_still_runs_with_a_deprecation_warning(rollout):
    seen = []
    with pytest.warns(DeprecationWarning, match=r"compute_advantages\(returns, team_rewards\) is deprecated"):

        class TeamOnly(PolicyGradientLearner):
            config_class = GRPOConfig
            name = "team_only"

            def compute_advantages(self, returns, team_rewards):
                seen.append((returns, team_rewards))
                return magrpo_advantages(team_rewards).unsqueeze(2).expand_as(returns)

    assert TeamOnly.advantages_take_team_rewards
    learner = make(TeamOnly, GRPOConfig(**TINY))
    advantages = learner.group_advantages(rollout, learner.returns(rollout))
    assert seen[-1][0] is rollout.returns and seen[-1][1] is rollout.team_rewards
    assert torch.equal(advantages, magrpo_advantages(rollout.team_rewards).unsqueeze(2).expand_as(rollout.returns))
    assert "losses/policy" in learner.train_step()


def test_a_one_argument_subclass_of_a_two_argument_one_is_not_deprecated():
    with pytest.warns(DeprecationWarning) as caught:

        class Old(GRPO):
            def compute_advantages(self, returns, team_rewards):
                return returns

    class New(Old):
        def compute_advantages(self, returns):
            return returns

    assert caught[0].filename == __file__  # the warning points at the class statement
    assert Old.advantages_take_team_rewards and not New.advantages_take_team_rewards
