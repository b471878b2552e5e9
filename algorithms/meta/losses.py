"""Advantage -> loss: the clipped policy gradient and the KL to a reference policy.

Pure functions on tensors, shared by every policy-gradient learner; a learner only
changes how advantages are formed (see :mod:`algorithms.core.advantages`).

The KL term is the *exact* categorical KL(pi || pi_ref), not a sampled estimator (such
as the k3 estimator of GRPO): the meta-action space has 3 actions, so summing over them
costs nothing and has no variance.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from algorithms.core.clipping import clip_ratio, clipped_regions


def clipped_policy_loss(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    clip_eps_high: float | None = None,
) -> torch.Tensor:
    r"""The clipped importance-ratio policy-gradient loss (PPO's surrogate, negated).

    From "Proximal Policy Optimization Algorithms" (Schulman et al. 2017,
    https://arxiv.org/abs/1707.06347), as used by GRPO, MAGRPO and SoftRankPO:

    .. math::

        \rho = \exp(\log\pi(a|o) - \log\pi_{old}(a|o)), \qquad
        L = -\operatorname{mean}\big[\min(\rho A,\
                \operatorname{clip}(\rho, 1-\epsilon, 1+\epsilon_{high}) A)\big],

    :math:`\epsilon_{high} = \epsilon` unless given (DAPO's clip-higher).

    Args:
        logp: Log-probabilities of the taken actions under the current policy, (N,).
        logp_old: The same under the policy that collected the data, (N,), no gradient.
        advantages: One advantage per sample, (N,).
        clip_eps: Clipping range epsilon, > 0.
        clip_eps_high: The upper range, > 0; None: ``clip_eps``.

    Returns:
        The scalar loss.

    Raises:
        ValueError: If the three inputs do not have the same 1-D shape.

    Example:
        >>> clipped_policy_loss(torch.log(torch.tensor([0.9])), torch.log(torch.tensor([0.5])),
        ...                     torch.tensor([2.0]), clip_eps=0.2)
        tensor(-2.4000)
    """
    if not (logp.ndim == 1 and logp.shape == logp_old.shape == advantages.shape):
        raise ValueError(
            f"logp, logp_old and advantages must share one 1-D shape (N,), got "
            f"{tuple(logp.shape)}, {tuple(logp_old.shape)}, {tuple(advantages.shape)}"
        )
    ratio = torch.exp(logp - logp_old)
    unclipped = ratio * advantages
    clipped = clip_ratio(ratio, clip_eps, clip_eps_high) * advantages
    return -torch.min(unclipped, clipped).mean()


def categorical_kl(logits: torch.Tensor, ref_logits: torch.Tensor) -> torch.Tensor:
    r"""Exact KL(pi || pi_ref) between categorical policies, per sample.

    .. math::

        \mathrm{KL}(\pi \,\|\, \pi_{ref})
            = \sum_a \pi(a|o)\,\big(\log\pi(a|o) - \log\pi_{ref}(a|o)\big).

    Args:
        logits: Logits of the trained policy, (N, A).
        ref_logits: Logits of the frozen reference policy, (N, A).

    Returns:
        The KL per sample, (N,), >= 0.

    Raises:
        ValueError: If the shapes differ or are not (N, A).

    Example:
        >>> p, q = torch.tensor([[0.5, 0.5]]), torch.tensor([[0.25, 0.75]])
        >>> categorical_kl(torch.log(p), torch.log(q))
        tensor([0.1438])
    """
    if not (logits.ndim == 2 and logits.shape == ref_logits.shape):
        raise ValueError(
            f"logits and ref_logits must share one (N, A) shape, got "
            f"{tuple(logits.shape)} and {tuple(ref_logits.shape)}"
        )
    logp = F.log_softmax(logits, dim=-1)
    ref_logp = F.log_softmax(ref_logits, dim=-1)
    return (logp.exp() * (logp - ref_logp)).sum(dim=-1)


def kl_regularized_policy_loss(
    logits: torch.Tensor,
    ref_logits: torch.Tensor,
    actions: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    kl_coef: float,
    clip_eps_high: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    r"""Clipped policy gradient plus beta times the exact KL to the reference policy.

    .. math::

        L = L^{clip}(\theta)
            + \beta\, \operatorname{mean}\big[\mathrm{KL}(\pi_\theta \,\|\, \pi_{ref})\big]

    (see :func:`clipped_policy_loss` and :func:`categorical_kl`).

    Args:
        logits: Current policy logits, (N, A).
        ref_logits: Frozen reference policy logits, (N, A) (e.g. the SFT policy).
        actions: Taken actions, int64 (N,).
        logp_old: Log-probabilities of ``actions`` under the behaviour policy, (N,).
        advantages: Advantages, (N,).
        clip_eps: Clipping range epsilon.
        kl_coef: beta >= 0; 0 switches the KL term off.
        clip_eps_high: The upper clipping range; None: ``clip_eps``.

    Returns:
        The scalar loss and detached statistics: ``policy`` (the clipped surrogate),
        ``kl`` (mean KL to the reference), ``approx_kl`` (mean KL(old || new), the k3
        estimator, to monitor the step size) and ``clip_frac`` (the share of samples whose
        ratio is clipped where it bites, :func:`~algorithms.core.clipping.clipped_regions`;
        ``clip_frac_low`` and ``clip_frac_high`` below and above the range).
    """
    logp_all = F.log_softmax(logits, dim=-1)
    logp = logp_all.gather(1, actions.unsqueeze(1)).squeeze(1)
    policy_loss = clipped_policy_loss(logp, logp_old, advantages, clip_eps, clip_eps_high)
    kl = categorical_kl(logits, ref_logits).mean()
    with torch.no_grad():
        log_ratio = logp - logp_old
        low, high = clipped_regions(log_ratio.exp(), advantages, clip_eps, clip_eps_high)
        stats = {
            "policy": policy_loss.detach(),
            "kl": kl.detach(),
            "approx_kl": ((log_ratio.exp() - 1) - log_ratio).mean(),
            "clip_frac": (low + high).mean(),
            "clip_frac_low": low.mean(),
            "clip_frac_high": high.mean(),
        }
    return policy_loss + kl_coef * kl, stats
