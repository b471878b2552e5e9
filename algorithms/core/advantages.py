"""Group-relative advantages: reward -> advantage, as pure functions on tensors.

Every function takes ``rewards`` of shape ``(B, G)``: ``B`` groups, each of ``G``
rollouts from the same start state (the same problem and the same round 0), and returns
advantages of the same shape. The group is the baseline; no critic is learned.

========================  ===================================================  ==========
function                  advantage of rollout g in its group                  paper
========================  ===================================================  ==========
``softrank_advantages``   Phi^{-1} of the smooth rank of R_g, in (0, 1)        MPDF
``grpo_advantages``       (R_g - mean) / (std + eps)                           DeepSeekMath
``magrpo_advantages``     R_g - mean                                           MAGRPO
========================  ===================================================  ==========
"""

from __future__ import annotations

import torch


def _check_rewards(rewards: torch.Tensor) -> None:
    """Raise a ``ValueError`` saying how to fix ``rewards`` unless finite, float, (B, G >= 2)."""
    if not (isinstance(rewards, torch.Tensor) and rewards.is_floating_point()):
        raise ValueError(
            f"rewards must be a floating-point torch.Tensor, got {rewards!r:.80}; "
            "convert with torch.as_tensor(rewards, dtype=torch.float32)"
        )
    if rewards.ndim != 2:
        raise ValueError(
            f"rewards must have shape (B, G) (groups x rollouts per group), got shape "
            f"{tuple(rewards.shape)}; reshape it, e.g. rewards.view(-1, group_size)"
        )
    if rewards.shape[1] < 2:
        raise ValueError(
            f"a group needs at least 2 rollouts to compare, got G={rewards.shape[1]}; "
            "raise the group size"
        )
    if not torch.isfinite(rewards).all():
        bad = (~torch.isfinite(rewards)).nonzero()[0].tolist()
        raise ValueError(
            f"rewards must be finite, got {rewards[tuple(bad)].item()} at index {tuple(bad)}; "
            "check the reward function and reward_scale"
        )


def softrank_advantages(rewards: torch.Tensor, tau: float = 0.5) -> torch.Tensor:
    r"""SoftRankPO advantages: smooth normal quantiles of the within-group rank.

    From "Learning to Deliberate: Meta-policy Collaboration for Agentic LLMs with
    Multi-agent Reinforcement Learning" (MPDF, https://arxiv.org/abs/2509.03817). Within
    each group of G rewards:

    .. math::

        z_g = (R_g - \bar R) / \sigma_R \quad (z_g = 0 \text{ if } \sigma_R = 0), \qquad
        s_g = \tfrac12 + \sum_{h \ne g} \operatorname{sigmoid}\big((z_g - z_h) / \tau\big),

        u_g = s_g / G, \qquad A_g = \Phi^{-1}(u_g),

    with :math:`\sigma_R` the population standard deviation of the group and
    :math:`\Phi^{-1}` the standard normal quantile function. :math:`s_g` is a smooth
    rank in :math:`(\tfrac12, G - \tfrac12)`, so the advantages only depend on the order
    (and, for tau > 0, the standardized gaps) of the rewards, never on their scale:

    * :math:`R \mapsto aR + b` with :math:`a > 0` leaves A unchanged (z is invariant);
    * an all-equal group gives :math:`s_g = G/2`, :math:`u_g = 1/2`, A = 0;
    * equal rewards get equal advantages;
    * :math:`|A_g| \le \Phi^{-1}(1 - 1/(2G))` (strictly, in exact arithmetic);
    * as :math:`\tau \to 0`, :math:`u_g \to (\mathrm{rank}_g - \tfrac12)/G` with average
      ranks for ties (the Hazen plotting positions).

    Args:
        rewards: Float tensor (B, G) of returns, B groups of G rollouts.
        tau: Temperature of the soft rank, > 0; small tau approaches hard ranks.

    Returns:
        Advantages (B, G), same dtype as ``rewards``.

    Raises:
        ValueError: If ``rewards`` is not a finite float (B, G >= 2) tensor or tau <= 0.

    Example:
        >>> softrank_advantages(torch.tensor([[0.0, 1.0], [3.0, 3.0]]), tau=0.5)
        tensor([[-0.6465,  0.6465],
                [ 0.0000,  0.0000]])
    """
    _check_rewards(rewards)
    if not tau > 0:
        raise ValueError(f"tau must be > 0 (the soft-rank temperature), got {tau}; try tau=0.5")
    group_size = rewards.shape[1]
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    std = centred.pow(2).mean(dim=1, keepdim=True).sqrt()
    z = torch.where(std > 0, centred / torch.where(std > 0, std, 1.0), 0.0)
    pairwise = torch.sigmoid((z.unsqueeze(2) - z.unsqueeze(1)) / tau)  # (B, G, G): [b, g, h]
    soft_rank = pairwise.sum(dim=2)  # the diagonal term h = g is sigmoid(0) = 1/2: the 1/2 of s_g
    return torch.special.ndtri(soft_rank / group_size)


def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    r"""GRPO advantages: rewards standardized within their group.

    From "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language
    Models" (Shao et al. 2024, https://arxiv.org/abs/2402.03300), outcome supervision:

    .. math::

        A_g = \frac{R_g - \bar R}{\sigma_R + \epsilon},

    with :math:`\sigma_R` the population standard deviation of the group. A group whose
    rewards differ has zero mean and (up to eps) unit population variance; an all-equal
    group gives A = 0. Unlike SoftRankPO, A scales with outliers: one large reward
    dominates its group.

    Args:
        rewards: Float tensor (B, G) of returns, B groups of G rollouts.
        eps: Added to the standard deviation, >= 0.

    Returns:
        Advantages (B, G).

    Raises:
        ValueError: If ``rewards`` is not a finite float (B, G >= 2) tensor or eps < 0.

    Example:
        >>> grpo_advantages(torch.tensor([[0.0, 1.0, 1.0, 0.0]]), eps=0.0)
        tensor([[-1.,  1.,  1., -1.]])
    """
    _check_rewards(rewards)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}; the usual value is 1e-6")
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    std = centred.pow(2).mean(dim=1, keepdim=True).sqrt()
    return torch.where(std > 0, centred / (std + eps), 0.0)


def magrpo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    r"""MAGRPO advantages: the joint return minus its group mean.

    From "LLM Collaboration With Multi-Agent Reinforcement Learning" (Liu et al. 2025,
    https://arxiv.org/abs/2508.04652). ``rewards`` are *joint* returns (one per joint
    trajectory, e.g. the sum of the agents' returns or the team reward); every agent of
    the trajectory receives the same advantage (centralized training, decentralized
    execution):

    .. math::

        A_g = R_g - \frac{1}{G} \sum_{h=1}^{G} R_h.

    No scale normalization: A moves with the reward scale.

    Args:
        rewards: Float tensor (B, G) of joint returns, B groups of G joint rollouts.

    Returns:
        Advantages (B, G), zero mean in every group.

    Raises:
        ValueError: If ``rewards`` is not a finite float (B, G >= 2) tensor.

    Example:
        >>> magrpo_advantages(torch.tensor([[0.0, 1.0, 2.0]]))
        tensor([[-1.,  0.,  1.]])
    """
    _check_rewards(rewards)
    return rewards - rewards.mean(dim=1, keepdim=True)
