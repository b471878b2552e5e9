"""TRL's GRPO loss variants in both families: clip-higher (DAPO), sequence-level importance
ratios (GSPO), the constant normalizer (Dr. GRPO) and the reward scale of GRPO's advantages."""

from __future__ import annotations

import pytest
import torch

from algorithms import cli
from algorithms.core.advantages import grpo_advantages, magrpo_advantages
from algorithms.core.checks import per_agent_groups
from algorithms.core.clipping import clipped_regions
from algorithms.core.config import GRPOSettings
from algorithms.meta.config import GRPOConfig
from algorithms.meta.losses import clipped_policy_loss, kl_regularized_policy_loss
from algorithms.text.config import TextGRPOConfig, TextMAGRPOConfig
from algorithms.text.losses import (
    aggregate,
    clipped_token_loss,
    importance_log_ratio,
    k3_kl,
    text_policy_loss,
    token_weights,
)


def test_batch_scale_divides_every_group_by_the_batch_deviation():
    rewards = torch.tensor([[0.0, 2.0, 4.0], [1.0, 1.0, 1.0], [0.0, 0.0, 3.0]])
    sigma = rewards.flatten().std(unbiased=False)
    expected = (rewards - rewards.mean(dim=1, keepdim=True)) / sigma
    torch.testing.assert_close(grpo_advantages(rewards, eps=0.0, scale="batch"), expected)
    group = grpo_advantages(rewards, eps=0.0)
    # group scaling makes a one-success group as loud as a wide one; batch scaling keeps their spreads apart
    assert group[0].std(unbiased=False).item() == pytest.approx(group[2].std(unbiased=False).item())
    assert expected[2].std(unbiased=False).item() < expected[0].std(unbiased=False).item()


def test_no_scale_is_the_centred_reward_and_an_equal_group_is_zero_under_every_scale():
    rewards = torch.tensor([[0.0, 1.0, 5.0], [2.0, 2.0, 2.0]])
    torch.testing.assert_close(grpo_advantages(rewards, scale="none"), magrpo_advantages(rewards))
    for scale in ("group", "batch", "none"):
        assert grpo_advantages(rewards, scale=scale)[1].tolist() == [0.0, 0.0, 0.0]
    assert grpo_advantages(torch.ones(2, 3), scale="batch").abs().sum() == 0  # no division by a zero deviation
    with pytest.raises(ValueError, match="scale"):
        grpo_advantages(rewards, scale="global")


def test_batch_scale_takes_each_agents_own_batch():
    returns = torch.tensor([[[0.0, 0.0], [1.0, 10.0]], [[0.0, 0.0], [3.0, 30.0]]])  # (B=2, G=2, n=2)
    scaled = per_agent_groups(lambda r: grpo_advantages(r, eps=0.0, scale="batch"), returns)
    torch.testing.assert_close(scaled[:, :, 0], scaled[:, :, 1])  # agent 1's rewards are agent 0's x 10
    alone = grpo_advantages(returns[:, :, 0], eps=0.0, scale="batch")
    torch.testing.assert_close(scaled[:, :, 0], alone)


def test_clip_higher_lets_a_good_tokens_ratio_rise_further():
    logp, old = torch.log(torch.tensor([[0.625]])), torch.log(torch.tensor([[0.5]]))  # ratio 1.25
    gain = torch.tensor([1.0])
    assert clipped_token_loss(logp, old, gain, clip_eps=0.2).item() == pytest.approx(-1.2)
    assert clipped_token_loss(logp, old, gain, clip_eps=0.2, clip_eps_high=0.28).item() == pytest.approx(-1.25)
    low = torch.log(torch.tensor([[0.35]]))  # ratio 0.7: the lower range stays clip_eps
    assert clipped_token_loss(low, old, -gain, clip_eps=0.2, clip_eps_high=0.28).item() == pytest.approx(0.8)
    meta = clipped_policy_loss(logp[0], old[0], gain, clip_eps=0.2, clip_eps_high=0.28)
    assert meta.item() == pytest.approx(-1.25)
    low, high = clipped_regions(torch.tensor([0.7, 0.7, 1.25, 1.3, 1.3]), torch.tensor([-1.0, 1.0, 1.0, 1.0, -1.0]), 0.2, 0.28)
    assert (low.tolist(), high.tolist()) == ([1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0])  # where it bites


def test_a_clipped_token_has_no_gradient_and_clip_higher_gives_it_one():
    old = torch.log(torch.tensor([[0.5, 0.5]]))
    for high, expected in ((None, [0.0, 1.0]), (0.28, [1.0, 1.0])):
        logp = torch.log(torch.tensor([[0.625, 0.5]])).requires_grad_(True)
        mask, weights = torch.ones(1, 2), torch.tensor([0.5])
        loss, stats = text_policy_loss(logp, old, None, torch.tensor([1.0]), mask, weights, 0.2, 0.0, high)
        (grad,) = torch.autograd.grad(loss, logp)
        assert (grad != 0).squeeze(0).float().tolist() == expected
        assert stats["clip_frac"].item() == pytest.approx(1.0 - sum(expected) / 2)


def test_meta_loss_reports_the_asymmetric_clip_fraction():
    logits = torch.log(torch.tensor([[0.625, 0.375], [0.7, 0.3]]))
    actions, old = torch.tensor([0, 0]), torch.log(torch.tensor([0.5, 0.5]))  # ratios 1.25 and 1.4
    _, symmetric = kl_regularized_policy_loss(logits, logits, actions, old, torch.ones(2), 0.2, 0.0)
    _, higher = kl_regularized_policy_loss(logits, logits, actions, old, torch.ones(2), 0.2, 0.0, clip_eps_high=0.28)
    assert (symmetric["clip_frac"].item(), higher["clip_frac"].item()) == (1.0, 0.5)


def test_sequence_ratio_is_the_geometric_mean_and_clips_the_sequence_as_a_whole():
    logp = torch.log(torch.tensor([[0.8, 0.4, 0.3], [0.5, 0.9, 0.9]]))
    old = torch.log(torch.tensor([[0.4, 0.4, 0.1], [0.5, 0.5, 0.5]]))
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # the third column and row 1's last two: padding
    ratio = importance_log_ratio(logp, old, mask, "sequence").exp()
    assert ratio[0].tolist() == pytest.approx([2**0.5] * 3) and ratio[1].tolist() == pytest.approx([1.0] * 3)
    torch.testing.assert_close(importance_log_ratio(logp, old, mask, "token"), logp - old)
    # token 1 of row 0 (ratio 1) is inside the range alone, outside with its sequence
    trained = logp.clone().requires_grad_(True)
    weights = token_weights(mask.sum(1), "token")
    grads = {}
    for level in ("token", "sequence"):
        loss, _ = text_policy_loss(trained, old, None, torch.tensor([1.0, 1.0]), mask, weights, 0.2, 0.0,
                                   importance_sampling=level)  # fmt: skip
        (grads[level],) = torch.autograd.grad(loss, trained)
    assert grads["token"][0, 1] != 0 and grads["sequence"][0, 1] == 0
    with pytest.raises(ValueError, match="importance sampling"):
        importance_log_ratio(logp, old, mask, "step")


def test_sequence_and_token_ratios_give_one_gradient_in_one_pass():
    """At pi_old = sg(pi) (MAGRPO, or GRPO's first step) GSPO's gradient is GRPO's."""
    torch.manual_seed(1)
    logp = torch.log_softmax(torch.randn(3, 5), dim=-1).detach().requires_grad_(True)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0], [1.0] * 5])
    advantages = torch.tensor([0.5, -1.0, 2.0])
    for aggregation in ("token", "sequence", "constant"):
        weights = token_weights(mask.sum(1), aggregation, 5)
        grads = []
        for level in ("token", "sequence"):
            loss, _ = text_policy_loss(logp, logp.detach(), None, advantages, mask, weights, 0.2, 0.0,
                                       importance_sampling=level)  # fmt: skip
            grads.append(torch.autograd.grad(loss, logp)[0])
        torch.testing.assert_close(grads[0], grads[1])


def test_constant_aggregation_divides_by_the_budget_and_accumulates_exactly():
    values = torch.tensor([[4.0, 9.0, 9.0], [1.0, 2.0, 9.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    weights = token_weights(mask.sum(1), "constant", max_length=4)
    assert aggregate(values, mask, weights).item() == pytest.approx((4 + 1 + 2) / (2 * 4))
    halves = sum(aggregate(values[k : k + 1], mask[k : k + 1], weights[k : k + 1]) for k in range(2))
    assert halves.item() == pytest.approx(aggregate(values, mask, weights).item())
    for short in (None, 1):
        with pytest.raises(ValueError, match="max_length"):
            token_weights(mask.sum(1), "constant", short)


def test_configs_check_the_new_settings():
    assert TextGRPOConfig(model="tiny", scale_rewards="none", clip_eps_high=0.28).clip_eps_high == 0.28
    assert GRPOConfig(scale_rewards="batch").scale_rewards == "batch"
    for bad, match in (({"scale_rewards": "global"}, "scale_rewards"), ({"clip_eps_high": 0.0}, "clip_eps_high"),
                       ({"clip_eps_high": float("nan")}, "clip_eps_high")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            GRPOSettings(**bad)
    with pytest.raises(ValueError, match="importance_sampling"):
        TextMAGRPOConfig(model="tiny", importance_sampling="step")
    for inert in ({"clip_eps_high": 0.28}, {"importance_sampling": "sequence"}):  # one step at ratio 1: no-ops
        with pytest.raises(ValueError, match="MAGRPO is one REINFORCE step on fresh samples"):
            TextMAGRPOConfig(model="tiny", **inert)


@pytest.mark.parametrize(
    ("setting", "value"),
    [("kl_coef", float("nan")), ("kl_coef", float("inf")), ("learning_rate", float("inf")), ("eps", float("nan")),
     ("eps", float("inf")), ("temperature", float("inf")), ("clip_eps", float("inf")), ("learning_rate", float("nan"))],
)  # fmt: skip
def test_a_setting_that_is_not_a_finite_number_is_refused_before_anything_runs(setting, value):
    """The TRL client: --kl-coef nan switched the KL off silently (and wrote NaN into
    config.json), --kl-coef inf and --learning-rate inf ran to exit 0 with NaN weights."""
    with pytest.raises(ValueError, match=setting):
        TextGRPOConfig(model="tiny", **{setting: value})
    assert TextGRPOConfig(model="tiny", max_grad_norm=float("inf")).max_grad_norm == float("inf")  # never clips
    with pytest.raises(ValueError, match="aggregation"):
        TextMAGRPOConfig(model="tiny", aggregation="bnpo")


def test_the_command_line_takes_the_new_settings():
    learner = cli.parse(["train", "text", "grpo", "--model", "tiny", "--clip-eps-high", "0.28", "--scale-rewards",
                         "none", "--importance-sampling", "sequence", "--aggregation", "constant"]).command.command.learner  # fmt: skip
    assert (learner.clip_eps_high, learner.scale_rewards, learner.importance_sampling, learner.aggregation) == (
        0.28, "none", "sequence", "constant"
    )
    meta = cli.parse(["train", "meta", "grpo", "--clip-eps-high", "0.3", "--scale-rewards", "batch"]).command.command.learner
    assert (meta.clip_eps_high, meta.scale_rewards) == (0.3, "batch")


def test_the_kl_and_the_clipped_share_are_token_means_under_every_aggregation():
    """The TRL client: under the constant aggregation they were scaled by length / max_new_tokens
    (all ratios clipped read 0.03), and clip_frac counted ratios whose clipping does not bite."""
    logp = torch.log(torch.tensor([[0.9, 0.9, 0.9], [0.9, 0.5, 0.5]]))
    old, ref = torch.log(torch.full((2, 3), 0.5)), torch.log(torch.full((2, 3), 0.25))
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    advantages = torch.tensor([1.0, -1.0])  # row 0: ratio 1.8 > 1.2 with A > 0 bites; row 1's 1.8 with A < 0 does not
    stat_weights = token_weights(mask.sum(1), "token")
    for aggregation in ("token", "sequence", "constant"):
        weights = token_weights(mask.sum(1), aggregation, 256)
        _, stats = text_policy_loss(logp, old, ref, advantages, mask, weights, 0.2, 0.1, stat_weights=stat_weights)
        expected_kl = sum(k3_kl(logp, ref)[i, t].item() for i in range(2) for t in range(3) if mask[i, t]) / 5
        assert stats["kl"].item() == pytest.approx(expected_kl)
        assert (stats["clip_frac"].item(), stats["clip_frac_high"].item(), stats["clip_frac_low"].item()) == pytest.approx((0.4, 0.4, 0.0))



def _meta_update(**settings):
    import deliberation_env as de
    from algorithms.meta import GRPO

    config = GRPOConfig(groups_per_update=3, group_size=4, update_epochs=4, num_minibatches=2, hidden_size=16,
                        num_heads=2, learning_rate=0.05, **settings)  # fmt: skip
    learner = GRPO(config, de.vector_env(config.num_envs, task="arithmetic", team="simulated", max_rounds=2))
    learner.train_step()
    return torch.cat([p.detach().flatten() for p in learner.network.parameters()])


def test_the_meta_learners_update_takes_clip_eps_high_and_scale_rewards():
    """A reviewer: the learners' tests passed with the new settings cut out of the update."""
    plain = _meta_update()
    assert torch.equal(plain, _meta_update())  # the same seed, the same update
    assert not torch.equal(plain, _meta_update(clip_eps_high=0.5))
    assert not torch.equal(plain, _meta_update(scale_rewards="none"))


def test_masked_truncated_sequences_weigh_nothing_and_leave_the_others_as_trl_does():
    lengths, kept = torch.tensor([2, 4, 6]), torch.tensor([True, False, True])
    token = token_weights(lengths, "token", kept=kept)
    assert token.tolist() == pytest.approx([1 / 8, 0.0, 1 / 8])  # a mean over the kept tokens only
    sequence = token_weights(lengths, "sequence", kept=kept)
    assert sequence.tolist() == pytest.approx([1 / 6, 0.0, 1 / 18])  # N stays 3: TRL's grpo mean over the batch
    constant = token_weights(lengths, "constant", 8, kept=kept)
    assert constant.tolist() == pytest.approx([1 / 24, 0.0, 1 / 24])
    assert token_weights(lengths, "token", kept=torch.zeros(3, dtype=torch.bool)).tolist() == [0.0, 0.0, 0.0]
    torch.testing.assert_close(token_weights(lengths, "token", kept=torch.ones(3, dtype=torch.bool)), token_weights(lengths, "token"))
    with pytest.raises(ValueError, match="one value per sequence"):
        token_weights(lengths, "token", kept=torch.ones(2, dtype=torch.bool))
