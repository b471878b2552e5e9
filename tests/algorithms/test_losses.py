"""The clipped policy-gradient loss and the exact KL, on hand-computed values."""

import math

import pytest
import torch

from algorithms.meta.losses import categorical_kl, clipped_policy_loss, kl_regularized_policy_loss


def test_clipped_loss_by_hand():
    logp_old = torch.log(torch.tensor([0.5, 0.5, 0.5, 0.5]))
    logp = torch.log(torch.tensor([0.9, 0.55, 0.2, 0.9]))  # ratios 1.8, 1.1, 0.4, 1.8
    advantages = torch.tensor([2.0, 1.0, -1.0, -1.0])
    # min(rho A, clip(rho) A): 1.2*2 = 2.4 ; 1.1 ; min(-0.4, -0.8) = -0.8 ; min(-1.8, -1.2) = -1.8
    expected = -(2.4 + 1.1 - 0.8 - 1.8) / 4
    assert clipped_policy_loss(logp, logp_old, advantages, clip_eps=0.2).item() == pytest.approx(
        expected
    )


def test_clipped_loss_gradient_vanishes_beyond_the_clip_and_is_reinforce_on_policy():
    logits = torch.zeros(2, 3, requires_grad=True)
    logp = torch.log_softmax(logits, -1)[:, 0]
    loss = clipped_policy_loss(logp, logp.detach() - 1.0, torch.tensor([1.0, 1.0]), clip_eps=0.2)
    loss.backward()
    assert torch.all(logits.grad == 0)  # ratio e > 1.2 with A > 0: clipped, no gradient
    logits.grad = None
    logp = torch.log_softmax(logits, -1)[:, 0]
    clipped_policy_loss(logp, logp.detach(), torch.tensor([1.0, -1.0]), clip_eps=0.2).backward()
    reinforce = torch.tensor(
        [[-1 / 3, 1 / 6, 1 / 6], [1 / 3, -1 / 6, -1 / 6]]
    )  # -A grad log pi / N
    assert torch.allclose(logits.grad, reinforce)


def test_exact_categorical_kl_by_hand():
    p, q = torch.tensor([[0.2, 0.3, 0.5]]), torch.tensor([[0.1, 0.6, 0.3]])
    expected = sum(pi * math.log(pi / qi) for pi, qi in zip(p[0].tolist(), q[0].tolist()))
    assert categorical_kl(torch.log(p), torch.log(q)).item() == pytest.approx(expected, rel=1e-5)
    assert categorical_kl(torch.log(p), torch.log(p) + 3.0).item() == pytest.approx(0.0, abs=1e-7)


def test_kl_regularized_loss_adds_beta_times_kl():
    torch.manual_seed(0)
    logits, ref_logits = torch.randn(5, 3), torch.randn(5, 3)
    actions = torch.tensor([0, 1, 2, 1, 0])
    logp_old = torch.log_softmax(logits, -1).gather(1, actions[:, None]).squeeze(1)
    advantages = torch.randn(5)
    loss0, stats = kl_regularized_policy_loss(
        logits, ref_logits, actions, logp_old, advantages, 0.2, 0.0
    )
    loss1, _ = kl_regularized_policy_loss(
        logits, ref_logits, actions, logp_old, advantages, 0.2, 0.5
    )
    assert loss0.item() == pytest.approx(-advantages.mean().item(), abs=1e-6)  # on-policy: ratio 1
    assert loss1.item() == pytest.approx(loss0.item() + 0.5 * stats["kl"].item(), abs=1e-6)
    assert (
        stats["approx_kl"].item() == pytest.approx(0.0, abs=1e-7)
        and stats["clip_frac"].item() == 0.0
    )


def test_shape_mismatches_are_clear_errors():
    with pytest.raises(ValueError, match="share one 1-D shape"):
        clipped_policy_loss(torch.zeros(3), torch.zeros(4), torch.zeros(3), 0.2)
    with pytest.raises(ValueError, match=r"share one \(N, A\) shape"):
        categorical_kl(torch.zeros(3, 3), torch.zeros(3, 2))
