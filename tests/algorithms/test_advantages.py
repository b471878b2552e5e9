"""Advantages: hand-computed values, the documented properties (hypothesis), bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm, rankdata

from algorithms.core.advantages import grpo_advantages, magrpo_advantages, softrank_advantages

# Rewards on a grid (like the env's: sums of +-1 differences times a scale), so positive
# affine maps and tiny temperatures are exact in float64.
groups = (
    st.integers(2, 8)
    .flatmap(
        lambda g: st.lists(
            st.lists(st.integers(-6, 6), min_size=g, max_size=g), min_size=1, max_size=4
        )
    )
    .map(lambda rows: torch.tensor(rows, dtype=torch.float64) * 0.25)
)


def phi_inv(u: float) -> float:
    return float(norm.ppf(u))


# ----------------------------------------------------------------- hand-computed values
def test_softrank_two_rollouts_by_hand():
    # z = (-1, 1); s_high = 1/2 + sigmoid(2 / tau); u = s / 2.
    tau = 0.5
    s_high = 0.5 + 1 / (1 + math.exp(-2 / tau))
    expected = phi_inv(s_high / 2)
    advantages = softrank_advantages(torch.tensor([[0.0, 1.0]], dtype=torch.float64), tau=tau)
    assert advantages[0].tolist() == pytest.approx([-expected, expected], abs=1e-12)


def test_softrank_three_rollouts_by_hand():
    rewards = torch.tensor([[0.0, 1.0, 1.0]], dtype=torch.float64)
    tau = 1.0
    # mean 2/3, population std sqrt(2)/3: z = (-sqrt2, 1/sqrt2, 1/sqrt2), gap 3/sqrt2.
    sig = 1 / (1 + math.exp(-3 / math.sqrt(2) / tau))
    s_low = 0.5 + 2 * (1 - sig)
    s_high = 0.5 + sig + 0.5
    expected = [phi_inv(s_low / 3), phi_inv(s_high / 3), phi_inv(s_high / 3)]
    assert softrank_advantages(rewards, tau=tau)[0].tolist() == pytest.approx(expected, abs=1e-12)


def test_grpo_by_hand():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 6.0], [5.0, 5.0, 5.0, 5.0]], dtype=torch.float64)
    # mean 3, population std sqrt((4 + 1 + 0 + 9) / 4) = sqrt(3.5)
    expected = [[-2 / math.sqrt(3.5), -1 / math.sqrt(3.5), 0.0, 3 / math.sqrt(3.5)], [0.0] * 4]
    result = grpo_advantages(rewards, eps=0.0)
    assert result[0].tolist() == pytest.approx(expected[0], abs=1e-12)
    assert result[1].tolist() == [0.0] * 4


def test_magrpo_by_hand():
    rewards = torch.tensor([[3.0, 0.0, 0.0], [1.0, 2.0, 6.0]])
    assert magrpo_advantages(rewards).tolist() == [[2.0, -1.0, -1.0], [-2.0, -1.0, 3.0]]


def test_unnormalised_magrpo_moves_with_the_reward_scale_and_softrank_does_not():
    rewards = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
    assert torch.allclose(magrpo_advantages(10 * rewards), 10 * magrpo_advantages(rewards))
    assert torch.allclose(softrank_advantages(10 * rewards), softrank_advantages(rewards))


# ----------------------------------------------------------------- SoftRankPO properties
@settings(max_examples=60, deadline=None)
@given(groups, st.floats(1e-2, 1e3), st.floats(-100, 100), st.floats(0.05, 5.0))
def test_softrank_is_invariant_to_positive_affine_maps(rewards, a, b, tau):
    # Exact in exact arithmetic; float64 rounding of a * R + b leaves errors far below 1e-7.
    assert torch.allclose(
        softrank_advantages(a * rewards + b, tau), softrank_advantages(rewards, tau), atol=1e-7
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 16), st.floats(-1e3, 1e3), st.floats(0.01, 10.0))
def test_softrank_is_zero_for_all_equal_groups(group_size, value, tau):
    assert torch.all(
        softrank_advantages(torch.full((3, group_size), value, dtype=torch.float64), tau) == 0
    )


@settings(max_examples=60, deadline=None)
@given(groups, st.floats(0.05, 5.0))
def test_softrank_gives_equal_rewards_equal_advantages(rewards, tau):
    advantages = softrank_advantages(rewards, tau)
    same = rewards.unsqueeze(2) == rewards.unsqueeze(1)
    gaps = (advantages.unsqueeze(2) - advantages.unsqueeze(1)).abs()
    assert torch.all(gaps[same] < 1e-12)


@settings(max_examples=60, deadline=None)
@given(groups, st.floats(1e-4, 10.0))
def test_softrank_is_bounded_by_the_extreme_quantile(rewards, tau):
    bound = phi_inv(1 - 1 / (2 * rewards.shape[1]))
    assert torch.all(softrank_advantages(rewards, tau).abs() <= bound + 1e-9)


@settings(max_examples=60, deadline=None)
@given(groups)
def test_softrank_approaches_average_rank_quantiles_as_tau_goes_to_zero(rewards):
    group_size = rewards.shape[1]
    expected = torch.tensor(norm.ppf((rankdata(rewards.numpy(), axis=1) - 0.5) / group_size))
    assert torch.allclose(softrank_advantages(rewards, tau=1e-4), expected, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(groups, st.floats(0.05, 5.0))
def test_softrank_preserves_order(rewards, tau):
    advantages = softrank_advantages(rewards, tau)
    higher = rewards.unsqueeze(2) > rewards.unsqueeze(1)
    assert torch.all((advantages.unsqueeze(2) - advantages.unsqueeze(1))[higher] > 0)


# ----------------------------------------------------------------- GRPO / MAGRPO properties
@settings(max_examples=60, deadline=None)
@given(groups)
def test_grpo_is_zero_mean_unit_variance_per_non_degenerate_group(rewards):
    advantages = grpo_advantages(rewards, eps=0.0)
    varied = rewards.std(dim=1) > 0
    assert torch.allclose(
        advantages.mean(dim=1), torch.zeros(len(rewards), dtype=torch.float64), atol=1e-9
    )
    if varied.any():
        assert torch.allclose(
            advantages[varied].var(dim=1, correction=0),
            torch.ones(int(varied.sum()), dtype=torch.float64),
            atol=1e-9,
        )
    assert torch.all(advantages[~varied] == 0)


@settings(max_examples=60, deadline=None)
@given(groups)
def test_magrpo_is_mean_centred_per_group(rewards):
    advantages = magrpo_advantages(rewards)
    assert torch.allclose(
        advantages.mean(dim=1), torch.zeros(len(rewards), dtype=torch.float64), atol=1e-9
    )
    assert torch.allclose(
        advantages.unsqueeze(2) - advantages.unsqueeze(1),
        rewards.unsqueeze(2) - rewards.unsqueeze(1),
    )


# ----------------------------------------------------------------- bad input
ALL = [softrank_advantages, grpo_advantages, magrpo_advantages]


@pytest.mark.parametrize("advantages", ALL)
@pytest.mark.parametrize("shape", [(4,), (2, 3, 4), (3, 1)])
def test_bad_shapes_are_clear_errors(advantages, shape):
    with pytest.raises(ValueError, match="rewards must have shape|at least 2 rollouts"):
        advantages(torch.zeros(shape))


@pytest.mark.parametrize("advantages", ALL)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_rewards_are_clear_errors(advantages, bad):
    rewards = torch.zeros(2, 4)
    rewards[1, 2] = bad
    with pytest.raises(ValueError, match=r"finite.*\(1, 2\)"):
        advantages(rewards)


@pytest.mark.parametrize("advantages", ALL)
def test_integer_rewards_are_a_clear_error(advantages):
    with pytest.raises(ValueError, match="floating-point"):
        advantages(torch.zeros(2, 4, dtype=torch.int64))


def test_bad_hyperparameters_are_clear_errors():
    with pytest.raises(ValueError, match="tau must be > 0"):
        softrank_advantages(torch.zeros(2, 4), tau=0.0)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        grpo_advantages(torch.zeros(2, 4), eps=-1.0)
