"""Group-relative advantages: reward -> advantage, as pure functions on tensors.

Every function takes ``rewards`` of shape ``(B, G)``: ``B`` groups, each of ``G``
rollouts from the same start state (the same problem and the same round 0), and returns
advantages of the same shape. The group is the baseline; no critic is learned.

========================  ===================================================  ==========
function                  advantage of rollout g in its group                  paper
========================  ===================================================  ==========
``softrank_advantages``   Phi^{-1} of the smooth rank of R_g, in (0, 1)        MPDF
``grpo_advantages``       (R_g - mean) / (std + eps), std: group or batch      DeepSeekMath
``magrpo_advantages``     R_g - mean                                           MAGRPO
========================  ===================================================  ==========
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from algorithms.core.config import RewardScale


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


def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6, scale: RewardScale = "group") -> torch.Tensor:
    r"""GRPO advantages: rewards centred within their group, scaled by a standard deviation.

    From "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language
    Models" (Shao et al. 2024, https://arxiv.org/abs/2402.03300), outcome supervision, with
    TRL's ``scale_rewards``:

    .. math::

        A_g = \frac{R_g - \bar R}{\sigma + \epsilon}, \qquad \sigma = \begin{cases}
            \sigma_R \text{ of the group} & \text{group (GRPO)} \\
            \sigma \text{ of all } B \times G \text{ rewards} & \text{batch} \\
            1,\ \epsilon = 0 & \text{none (Dr. GRPO: } A_g = R_g - \bar R)
        \end{cases}

    with population standard deviations. With ``group`` a group whose rewards differ has
    zero mean and (up to eps) unit population variance; an all-equal group gives A = 0
    (with any scale). Unlike SoftRankPO, A scales with outliers: one large reward
    dominates its group. ``group`` also weighs a nearly-solved group (one success in G) as
    much as a split one, which Dr. GRPO (Liu et al. 2025, https://arxiv.org/abs/2503.20783)
    calls a difficulty bias; ``batch`` and ``none`` do not.

    Args:
        rewards: Float tensor (B, G) of returns, B groups of G rollouts.
        eps: Added to the standard deviation, >= 0.
        scale: ``"group"``, ``"batch"`` or ``"none"``.

    Returns:
        Advantages (B, G).

    Raises:
        ValueError: If ``rewards`` is not a finite float (B, G >= 2) tensor, eps < 0 or
            ``scale`` is another name.

    Example:
        >>> grpo_advantages(torch.tensor([[0.0, 1.0, 1.0, 0.0]]), eps=0.0)
        tensor([[-1.,  1.,  1., -1.]])
        >>> grpo_advantages(torch.tensor([[0.0, 2.0], [1.0, 1.0]]), eps=0.0, scale="batch")  # sigma = 0.7071
        tensor([[-1.4142,  1.4142],
                [ 0.0000,  0.0000]])
    """
    _check_rewards(rewards)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}; the usual value is 1e-6")
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    if scale == "none":
        return centred
    if scale == "group":
        std = centred.pow(2).mean(dim=1, keepdim=True).sqrt()
        return torch.where(std > 0, centred / (std + eps), 0.0)
    if scale == "batch":
        std = rewards.std(unbiased=False)
        return centred / (std + eps) if std > 0 else torch.zeros_like(centred)
    raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")


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
