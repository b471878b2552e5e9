"""The token losses, returns and advantages of the LLM-weight learners, on hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from algorithms.core.advantages import grpo_advantages
from algorithms.text.losses import (
    aggregate,
    baseline_advantages,
    clipped_token_loss,
    cross_returns,
    discounted_returns,
    k3_kl,
    text_policy_loss,
    token_weights,
)

LOG = math.log


def hand_batch():
    """Two sequences of 1 and 2 tokens: a clipped positive ratio, a negative advantage."""
    logp = torch.log(torch.tensor([[0.8, 1.0], [0.4, 0.8]]))
    logp_old = torch.log(torch.tensor([[0.5, 1.0], [0.5, 0.8]]))
    ref_logp = torch.log(torch.tensor([[0.25, 1.0], [0.4, 0.4]]))
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    return logp, logp_old, ref_logp, torch.tensor([1.0, -2.0]), mask


def k3(pi, ref):
    return ref / pi - LOG(ref / pi) - 1


def test_token_weights_by_hand():
    lengths = torch.tensor([1, 2, 5])
    assert token_weights(lengths, "sequence").tolist() == pytest.approx([1 / 3, 1 / 6, 1 / 15])
    assert token_weights(lengths, "token").tolist() == pytest.approx([1 / 8] * 3)
    with pytest.raises(ValueError, match="aggregation"):
        token_weights(lengths, "batch")
    with pytest.raises(ValueError, match="lengths"):
        token_weights(torch.tensor([2, 0]), "token")


def test_aggregate_sequence_mean_and_token_mean_by_hand():
    values = torch.tensor([[4.0, 9.0, 9.0], [1.0, 2.0, 9.0]])  # 9: padding, never counted
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    lengths = mask.sum(1)
    assert aggregate(values, mask, token_weights(lengths, "sequence")).item() == pytest.approx((4 + 1.5) / 2)
    assert aggregate(values, mask, token_weights(lengths, "token")).item() == pytest.approx((4 + 1 + 2) / 3)


def test_clipped_token_loss_by_hand():
    logp, logp_old, _, advantages, _ = hand_batch()
    losses = clipped_token_loss(logp, logp_old, advantages, clip_eps=0.2)
    # ratio 1.6 with A = 1 is clipped to 1.2; ratio 0.8 with A = -2 gives 1.6; ratio 1 gives 2
    assert losses[0, 0].item() == pytest.approx(-1.2)
    assert losses[1].tolist() == pytest.approx([1.6, 2.0])
    with pytest.raises(ValueError, match="advantages"):
        clipped_token_loss(logp, logp_old, torch.ones(3), clip_eps=0.2)


@pytest.mark.parametrize(
    ("aggregation", "policy", "kl", "clip_frac"),
    [
        ("sequence", 0.5 * -1.2 + 0.25 * (1.6 + 2.0), 0.5 * k3(0.8, 0.25) + 0.25 * k3(0.8, 0.4), 0.5),
        ("token", (-1.2 + 1.6 + 2.0) / 3, (k3(0.8, 0.25) + k3(0.8, 0.4)) / 3, 1 / 3),
    ],
)
def test_text_policy_loss_on_a_hand_made_batch(aggregation, policy, kl, clip_frac):
    logp, logp_old, ref_logp, advantages, mask = hand_batch()
    weights = token_weights(mask.sum(1), aggregation)
    loss, stats = text_policy_loss(logp, logp_old, ref_logp, advantages, mask, weights, clip_eps=0.2, kl_coef=0.5)
    assert loss.item() == pytest.approx(policy + 0.5 * kl, rel=1e-6)
    assert stats["policy"].item() == pytest.approx(policy, rel=1e-6)
    assert stats["kl"].item() == pytest.approx(kl, rel=1e-6)
    assert stats["clip_frac"].item() == pytest.approx(clip_frac)


def test_one_pass_surrogate_has_the_reinforce_gradient():
    """MAGRPO's update: at pi_old = sg(pi) the clipped loss's gradient is -sum w A grad log pi."""
    torch.manual_seed(0)
    logp = torch.log_softmax(torch.randn(3, 4), dim=-1).detach().requires_grad_(True)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    advantages = torch.tensor([0.5, -1.0, 2.0])
    weights = token_weights(mask.sum(1), "sequence")
    loss, _ = text_policy_loss(logp, logp.detach(), None, advantages, mask, weights, clip_eps=0.2, kl_coef=0.0)
    (surrogate,) = torch.autograd.grad(loss, logp)
    reinforce = -(advantages[:, None] * logp * mask * weights[:, None]).sum()
    (expected,) = torch.autograd.grad(reinforce, logp)
    assert torch.allclose(surrogate, expected)


def test_kl_needs_the_reference():
    logp, logp_old, _, advantages, mask = hand_batch()
    with pytest.raises(ValueError, match="ref_logp"):
        text_policy_loss(logp, logp_old, None, advantages, mask, torch.ones(2), clip_eps=0.2, kl_coef=0.1)


def test_k3_is_zero_at_the_reference_and_positive_elsewhere():
    logp = torch.log(torch.tensor([0.5, 0.5]))
    assert k3_kl(logp, logp).tolist() == [0.0, 0.0]
    assert k3_kl(logp, torch.log(torch.tensor([0.25, 0.9]))).tolist() == pytest.approx([k3(0.5, 0.25), k3(0.5, 0.9)])


def test_discounted_returns_by_hand():
    rewards = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 0.0]])  # (T=3, 2 rollouts)
    returns = discounted_returns(rewards, gamma=0.5)
    assert returns[:, 0].tolist() == [1.0 + 0.5 * 0.0 + 0.25 * 4.0, 0.0 + 0.5 * 4.0, 4.0]
    assert returns[:, 1].tolist() == [0.0 + 0.5 * 2.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(rewards, gamma=1.5)


def test_cross_returns_average_every_combination_containing_a_sample():
    # G = 2, n = 3: combination c = 4 g0 + 2 g1 + g2, joint reward R(c) = c
    joint = torch.arange(8.0)[None]
    returns = cross_returns(joint, n_agents=3)[0]  # (G, n)
    assert returns[:, 0].tolist() == [(0 + 1 + 2 + 3) / 4, (4 + 5 + 6 + 7) / 4]
    assert returns[:, 1].tolist() == [(0 + 1 + 4 + 5) / 4, (2 + 3 + 6 + 7) / 4]
    assert returns[:, 2].tolist() == [(0 + 2 + 4 + 6) / 4, (1 + 3 + 5 + 7) / 4]
    with pytest.raises(ValueError, match="G\\^n"):
        cross_returns(torch.zeros(1, 6), n_agents=2)


def test_cross_returns_credit_each_agent_with_its_own_reward():
    """With ``credit="contribution"`` each agent's cross return averages its own credited
    reward. A red team's pair (sample 0 right, sample 1 wrong; joint reward 1 for a right
    vote, 1/2 for a tie, plus 0.1 x the asked form): agent 1 was credited with agent 0's
    contribution, which paid its wrong sample 0.3 and its right one -0.2."""
    from types import SimpleNamespace

    from algorithms.text.base import TextPolicyGradientLearner

    credited = np.array([[[0.05, 0.05], [0.55, -0.45], [-0.45, 0.55], [0.05, 0.05]]])  # (T, E = G^n, n), c = 2 g0 + g1
    learner = SimpleNamespace(config=SimpleNamespace(pairing="cross", groups_per_update=1, group_size=2), agents=["agent_0", "agent_1"])
    returns = TextPolicyGradientLearner._group_rewards(learner, credited)[0, 0]  # (G, n)
    assert returns[:, 1].tolist() == pytest.approx([0.3, -0.2])  # agent 1: right 0.3 > wrong -0.2
    assert returns[:, 0].tolist() == pytest.approx([0.3, -0.2])
    shared = cross_returns(torch.arange(8.0)[None], n_agents=3)
    assert torch.equal(cross_returns(torch.arange(8.0)[None, :, None].expand(1, 8, 3), n_agents=3), shared)


@pytest.mark.parametrize(
    ("baseline", "expected"),
    [
        ("mean", [-1.0, -1.0, 2.0]),  # mean 2
        ("rloo", [1 - 2.5, 1 - 2.5, 4 - 1.0]),  # mean of the two others
        ("max", [-3.0, -3.0, 0.0]),
        ("raw", [1.0, 1.0, 4.0]),
    ],
)
def test_baseline_advantages_by_hand(baseline, expected):
    assert baseline_advantages(torch.tensor([[1.0, 1.0, 4.0]]), baseline)[0].tolist() == pytest.approx(expected)


def test_normalized_advantages_make_the_four_baselines_coincide_with_grpo():
    """CoMLRL's default (advantage_normalization=True): mean, rloo, max and raw give one
    advantage, GRPO's; an all-equal group stays 0; unnormalized, the four differ."""
    rewards = torch.tensor([[1.0, 1.0, 4.0, 0.5], [2.0, 2.0, 2.0, 2.0], [0.0, 3.0, 1.0, 1.0]])
    normalized = [baseline_advantages(rewards, b, normalize=True) for b in ("mean", "rloo", "max", "raw")]
    for other in normalized[1:]:
        torch.testing.assert_close(other, normalized[0])
    torch.testing.assert_close(normalized[0], grpo_advantages(rewards, eps=0.0))
    assert normalized[0][1].tolist() == [0.0] * 4
    plain = [baseline_advantages(rewards, b) for b in ("mean", "rloo", "max", "raw")]
    assert all(not torch.allclose(plain[0], other) for other in plain[1:])


def test_baseline_advantages_reject_bad_input():
    with pytest.raises(ValueError, match="baseline"):
        baseline_advantages(torch.tensor([[1.0, 2.0]]), "median")
    with pytest.raises(ValueError, match="finite"):
        baseline_advantages(torch.tensor([[1.0, float("nan")]]), "raw")
