"""Reward -> return -> advantage -> token loss for LLM-weight learners, as pure functions.

The group advantage functions themselves live in :mod:`algorithms.core.advantages` (shared
with the meta-policy learners); this module adds what token-level learning needs:

=============================  =============================================================
function                       what
=============================  =============================================================
``discounted_returns``         per-turn returns G_t = r_t + gamma G_{t+1}
``cross_returns``              "cross" pairing: each agent's sample scored by the mean joint
                               reward of every joint action that contains it
``baseline_advantages``        CoMLRL's MAGRPO baselines: mean, rloo, max, raw; its normalization
``token_weights``              sequence-mean, token-mean or constant aggregation, as weights
``aggregate``                  the weighted sum of per-token values
``importance_log_ratio``       log pi / pi_old per token, or per sequence (GSPO)
``clipped_token_loss``         the clipped-ratio policy gradient per token
``k3_kl``                      the k3 estimator of KL(pi || pi_ref) per token
``text_policy_loss``           clipped policy gradient + beta * KL, aggregated
=============================  =============================================================
"""

from __future__ import annotations

from typing import Literal

import torch

from algorithms.core.advantages import magrpo_advantages
from algorithms.core.clipping import clip_ratio, clipped_regions

Aggregation = Literal["token", "sequence", "constant"]
ImportanceSampling = Literal["token", "sequence"]
Baseline = Literal["mean", "rloo", "max", "raw"]


def discounted_returns(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    r"""Returns per turn, turn first: :math:`G_t = r_t + \gamma\, G_{t+1}`, :math:`G_{T} = 0`.

    Args:
        rewards: (T, ...) rewards of turns 0 .. T-1 (0 after an episode ended).
        gamma: Discount in [0, 1].

    Returns:
        (T, ...) returns.

    Example:
        >>> discounted_returns(torch.tensor([1.0, 0.0, 2.0]), gamma=0.5)
        tensor([1.5000, 1.0000, 2.0000])
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    returns = torch.zeros_like(rewards)
    following = torch.zeros_like(rewards[0])
    for turn in range(rewards.shape[0] - 1, -1, -1):
        following = rewards[turn] + gamma * following
        returns[turn] = following
    return returns


def cross_returns(rewards: torch.Tensor, n_agents: int) -> torch.Tensor:
    r"""The "cross" pairing: each agent's G samples, scored over all G^n joint actions.

    Joint action c of a group combines sample :math:`g_i(c)` of every agent i, where
    :math:`g_i(c)` is digit i of c in base G, agent 0 the most significant. The return of
    agent i's sample g is the mean of agent i's reward over the :math:`G^{n-1}` joint
    actions that contain it:

    .. math:: R_{i,g} = G^{-(n-1)} \sum_{c:\, g_i(c) = g} R_i(c),

    where :math:`R_i(c)` is the joint reward R(c) (``credit="joint"``: one column for all)
    or agent i's own credited reward, its leave-one-out contribution or Shapley value
    (``"contribution"``, ``"shapley"``: agent i is never credited with another agent's).

    Args:
        rewards: (B, G^n) joint rewards of B groups, or (B, G^n, n) each agent's reward.
        n_agents: n >= 1.

    Returns:
        (B, G, n) per-agent sample returns.

    Example:
        >>> cross_returns(torch.tensor([[0.0, 1.0, 2.0, 3.0]]), n_agents=2)[0]
        tensor([[0.5000, 1.0000],
                [2.5000, 2.0000]])
    """
    if rewards.dim() == 2:
        rewards = rewards.unsqueeze(-1).expand(*rewards.shape, n_agents)
    num_groups, combos, _ = rewards.shape
    group_size = round(combos ** (1.0 / n_agents))
    if group_size**n_agents != combos:
        raise ValueError(f"cross pairing needs G^n joint rewards per group, got {combos} for n={n_agents}")
    columns = []
    for agent in range(n_agents):
        grid = rewards[:, :, agent].reshape(num_groups, *([group_size] * n_agents))
        others = tuple(1 + k for k in range(n_agents) if k != agent)
        columns.append(grid.mean(dim=others) if others else grid)
    return torch.stack(columns, dim=2)


def baseline_advantages(rewards: torch.Tensor, baseline: Baseline = "mean", normalize: bool = False) -> torch.Tensor:
    r"""MAGRPO's advantages with CoMLRL's choice of baseline b (groups of G, (B, G)).

    .. math:: A_g = R_g - b_g, \qquad b_g = \begin{cases}
        \frac1G \sum_h R_h & \text{mean (MAGRPO, via magrpo\_advantages)} \\
        \frac1{G-1} \sum_{h \ne g} R_h & \text{rloo (MARLOO)} \\
        \max_h R_h & \text{max (MAREMAX: only the group's best is not pushed down)} \\
        0 & \text{raw (MAREINFORCE)}
    \end{cases}

    With ``normalize`` (CoMLRL's default ``advantage_normalization=True``) the group's
    advantages are then standardized, with the population standard deviation:

    .. math:: \hat A_g = \frac{A_g - \bar A}{\max(\sigma_A, 10^{-6})}.

    Every baseline above is R minus a constant of the group or a positive multiple of
    :math:`R - \bar R`, so after standardization the four coincide, and equal GRPO's
    advantages (:func:`~algorithms.core.advantages.grpo_advantages`, up to where eps enters).

    Args:
        rewards: (B, G) finite returns, G >= 2.
        baseline: ``"mean"``, ``"rloo"``, ``"max"`` or ``"raw"``.
        normalize: Standardize each group's advantages (CoMLRL's default; not the paper's
            equation, which is the unnormalized :math:`A_g = R_g - b_g`).

    Returns:
        (B, G) advantages.

    Example:
        >>> r = torch.tensor([[0.0, 1.0, 2.0]])
        >>> [baseline_advantages(r, b).tolist()[0] for b in ("mean", "rloo", "max", "raw")]
        [[-1.0, 0.0, 1.0], [-1.5, 0.0, 1.5], [-2.0, -1.0, 0.0], [0.0, 1.0, 2.0]]
        >>> baseline_advantages(r, "max", normalize=True)
        tensor([[-1.2247,  0.0000,  1.2247]])
    """
    advantages = _unnormalized_baseline_advantages(rewards, baseline)
    if not normalize:
        return advantages
    centred = advantages - advantages.mean(dim=1, keepdim=True)
    return centred / advantages.std(dim=1, unbiased=False, keepdim=True).clamp(min=1e-6)


def _unnormalized_baseline_advantages(rewards: torch.Tensor, baseline: Baseline) -> torch.Tensor:
    """:math:`A_g = R_g - b_g` of :func:`baseline_advantages`."""
    centred = magrpo_advantages(rewards)  # also checks rewards
    if baseline == "mean":
        return centred
    if baseline == "rloo":  # R_g - (sum - R_g)/(G-1) = G/(G-1) (R_g - mean)
        group_size = rewards.shape[1]
        return centred * group_size / (group_size - 1)
    if baseline == "max":
        return rewards - rewards.max(dim=1, keepdim=True).values
    if baseline == "raw":
        return rewards.clone()
    raise ValueError(f"baseline must be 'mean', 'rloo', 'max' or 'raw', got {baseline!r}")


def token_weights(
    lengths: torch.Tensor, aggregation: Aggregation, max_length: int | None = None, kept: torch.Tensor | None = None
) -> torch.Tensor:
    r"""The weight of each token of sequence i in the batch loss, one value per sequence.

    For N sequences of lengths :math:`|o_i|`, per-token values :math:`\ell_{i,t}` and the
    completion budget :math:`L_{max}` (``max_new_tokens``):

    .. math::

        \text{sequence mean (GRPO)}:\ L = \frac1N \sum_i \frac{1}{|o_i|} \sum_t \ell_{i,t}
            \ \Rightarrow\ w_i = \frac{1}{N |o_i|}; \qquad
        \text{token mean (DAPO)}:\ L = \frac{\sum_i \sum_t \ell_{i,t}}{\sum_i |o_i|}
            \ \Rightarrow\ w_i = \frac{1}{\sum_j |o_j|};

        \text{constant (Dr. GRPO)}:\ L = \frac{1}{N L_{max}} \sum_i \sum_t \ell_{i,t}
            \ \Rightarrow\ w_i = \frac{1}{N L_{max}}.

    The sequence mean weighs a token of a short completion more than one of a long one
    (a long wrong completion is pushed down less per token: Dr. GRPO's length bias); the two
    others weigh every token alike, the constant one also across batches. TRL's
    ``loss_type`` names them ``grpo``, ``dapo`` (``bnpo`` per micro-batch) and ``dr_grpo``.
    Weights of the whole minibatch make a loss summed over micro-batches equal the
    minibatch's loss (gradient accumulation is exact).

    With ``kept`` (TRL's ``mask_truncated_completions``: DAPO's overlong filtering), a
    sequence not kept weighs 0, and the sums run as TRL's losses run over its masked
    completions: the token mean over the kept sequences' tokens, while :math:`N` stays
    every sequence of the batch (a dropped sequence adds 0 to the sequence mean and the
    constant one). No sequence kept: every weight 0.

    Args:
        lengths: (N,) token counts, each >= 1.
        aggregation: ``"sequence"``, ``"token"`` or ``"constant"``.
        max_length: :math:`L_{max}` >= every length; needed by ``"constant"`` only.
        kept: (N,) booleans, the sequences the loss keeps; None: all.

    Returns:
        (N,) float weights.

    Example:
        >>> lengths = torch.tensor([1, 3])
        >>> token_weights(lengths, "sequence"), token_weights(lengths, "token"), token_weights(lengths, "constant", 4)
        (tensor([0.5000, 0.1667]), tensor([0.2500, 0.2500]), tensor([0.1250, 0.1250]))
    """
    lengths = lengths.to(torch.float32)
    if lengths.ndim != 1 or not (lengths >= 1).all():
        raise ValueError(f"lengths must be a 1-D tensor of counts >= 1, got {lengths.tolist()}")
    kept = torch.ones_like(lengths) if kept is None else kept.to(torch.float32)
    if kept.shape != lengths.shape:
        raise ValueError(f"kept must have one value per sequence, got {kept.shape} for {lengths.shape}")
    if aggregation == "sequence":
        return kept / (len(lengths) * lengths)
    if aggregation == "token":
        return kept / max((kept * lengths).sum().item(), 1.0)
    if aggregation == "constant":
        if max_length is None or max_length < lengths.max().item():
            raise ValueError(f"constant aggregation needs max_length >= every length, got {max_length}")
        return kept / (len(lengths) * max_length)
    raise ValueError(f"aggregation must be 'token', 'sequence' or 'constant', got {aggregation!r}")


def aggregate(values: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_i w_i \sum_t m_{i,t}\, v_{i,t}` for (N, T) values and mask and (N,) weights.

    Example:
        >>> values, mask = torch.tensor([[4.0, 0.0], [1.0, 2.0]]), torch.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> aggregate(values, mask, token_weights(mask.sum(1), "sequence"))  # (4 + 1.5) / 2
        tensor(2.7500)
    """
    return (values * mask * weights[:, None]).sum()


def importance_log_ratio(
    logp: torch.Tensor, logp_old: torch.Tensor, mask: torch.Tensor, level: ImportanceSampling = "token"
) -> torch.Tensor:
    r"""The log importance ratio of each token, (N, T): its own (PPO, GRPO), or its
    sequence's (GSPO, Zheng et al. 2025, https://arxiv.org/abs/2507.18071; TRL's
    ``importance_sampling_level="sequence"``), the geometric mean over the sequence's tokens:

    .. math::

        \log \rho_{i,t} = \log\pi_\theta(o_{i,t}) - \log\pi_{old}(o_{i,t})
        \quad\text{or}\quad
        \log s_i = \frac{1}{|o_i|} \sum_t m_{i,t} \big(\log\pi_\theta(o_{i,t}) - \log\pi_{old}(o_{i,t})\big).

    With a sequence's ratio, the sequence is clipped as a whole, and a token's gradient
    weighs its sequence's ratio rather than its own. At :math:`\pi_{old} = \pi_\theta`
    both levels give the same gradient.

    Args:
        logp, logp_old: (N, T) log-probabilities (current, sampling policy).
        mask: (N, T), 1 where a token is.
        level: ``"token"`` or ``"sequence"``.

    Returns:
        (N, T) log ratios (a sequence's value in every column, padding included).

    Example:
        >>> logp, old = torch.log(torch.tensor([[0.8, 0.4]])), torch.log(torch.tensor([[0.4, 0.4]]))
        >>> importance_log_ratio(logp, old, torch.ones(1, 2), "sequence").exp()  # sqrt(2 x 1)
        tensor([[1.4142, 1.4142]])
    """
    log_ratio = logp - logp_old
    if level == "token":
        return log_ratio
    if level == "sequence":
        sequence = (log_ratio * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)
        return sequence.expand_as(log_ratio)
    raise ValueError(f"importance sampling level must be 'token' or 'sequence', got {level!r}")


def clipped_token_loss(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    clip_eps: float,
    clip_eps_high: float | None = None,
    log_ratio: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""The clipped surrogate per token, negated (PPO, as GRPO applies it to tokens):

    .. math::

        \rho_{i,t} = \exp(\log\pi_\theta(o_{i,t}) - \log\pi_{old}(o_{i,t})), \qquad
        \ell_{i,t} = -\min\big(\rho_{i,t} A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\epsilon, 1+\epsilon_{high}) A_i\big),

    :math:`\epsilon_{high} = \epsilon` unless given (DAPO's clip-higher). At
    :math:`\log\pi_{old} = \operatorname{sg}(\log\pi_\theta)` (one pass over fresh
    samples) :math:`\rho = 1` and :math:`\nabla \ell_{i,t} = -A_i \nabla\log\pi_\theta(o_{i,t})`:
    exactly REINFORCE, MAGRPO's update.

    Args:
        logp: (N, T) log-probabilities under the current policy.
        logp_old: (N, T) under the sampling policy (no gradient).
        advantages: (N,) one advantage per sequence, shared by its tokens.
        clip_eps: epsilon > 0.
        clip_eps_high: The upper range > 0; None: ``clip_eps``.
        log_ratio: (N, T) :math:`\log\rho` where it is not the tokens' own
            (:func:`importance_log_ratio` of a sequence); None: ``logp - logp_old``.

    Returns:
        (N, T) per-token losses (padding is masked by :func:`aggregate`).

    Example:
        >>> clipped_token_loss(torch.log(torch.tensor([[0.9, 0.5]])), torch.log(torch.tensor([[0.5, 0.5]])),
        ...                    torch.tensor([2.0]), clip_eps=0.2)
        tensor([[-2.4000, -2.0000]])
    """
    if not (logp.ndim == 2 and logp.shape == logp_old.shape and advantages.shape == logp.shape[:1]):
        raise ValueError(
            f"need logp and logp_old of one (N, T) shape and advantages (N,), got {tuple(logp.shape)}, "
            f"{tuple(logp_old.shape)}, {tuple(advantages.shape)}"
        )
    ratio = torch.exp(logp - logp_old if log_ratio is None else log_ratio)
    gains = advantages[:, None]
    return -torch.min(ratio * gains, clip_ratio(ratio, clip_eps, clip_eps_high) * gains)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    r"""The k3 estimator of KL(pi || pi_ref) per sampled token (Schulman 2020; GRPO):

    .. math:: k_3 = \exp(\log\pi_{ref} - \log\pi) - (\log\pi_{ref} - \log\pi) - 1 \ \ge 0,

    unbiased for the KL when the tokens are sampled from pi, and 0 where pi = pi_ref.

    Example:
        >>> k3_kl(torch.log(torch.tensor([0.5])), torch.log(torch.tensor([0.25])))
        tensor([0.1931])
    """
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1.0


def text_policy_loss(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    ref_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor,
    clip_eps: float,
    kl_coef: float,
    clip_eps_high: float | None = None,
    importance_sampling: ImportanceSampling = "token",
    stat_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    r"""The aggregated token loss: :math:`L = \sum_i w_i \sum_t m_{i,t} (\ell_{i,t} + \beta k_{3,i,t})`.

    (:func:`clipped_token_loss` of :func:`importance_log_ratio`, :func:`k3_kl`, weights from
    :func:`token_weights`.)

    Args:
        logp, logp_old: (N, T) log-probabilities (current, sampling policy).
        ref_logp: (N, T) under the reference policy, or ``None`` when ``kl_coef`` is 0.
        advantages: (N,).
        mask: (N, T), 1 where a token is.
        weights: (N,) token weights of these sequences.
        clip_eps: epsilon > 0.
        kl_coef: beta >= 0.
        clip_eps_high: The upper clipping range; None: ``clip_eps``.
        importance_sampling: ``"token"`` or ``"sequence"`` (GSPO) ratios.
        stat_weights: (N,) the weights of the statistics but ``policy``; None: ``weights``.
            The learners give the token mean's (:func:`token_weights` ``"token"``), so the KL
            and the clipped share are means over tokens under any aggregation, as TRL logs them.

    Returns:
        The scalar loss and detached statistics: ``policy`` (the surrogate part, aggregated
        as the loss), ``kl`` (k3, 0 without a reference), ``clip_frac`` (the share of tokens
        whose ratio is clipped where it bites: :func:`~algorithms.core.clipping.clipped_regions`),
        ``clip_frac_low`` and ``clip_frac_high`` (below and above the range), aggregated with
        ``stat_weights``.

    Raises:
        ValueError: If ``kl_coef`` > 0 and ``ref_logp`` is ``None``.
    """
    if kl_coef > 0 and ref_logp is None:
        raise ValueError("kl_coef > 0 needs the reference log-probabilities ref_logp")
    log_ratio = importance_log_ratio(logp, logp_old, mask, importance_sampling)
    per_token = clipped_token_loss(logp, logp_old, advantages, clip_eps, clip_eps_high, log_ratio=log_ratio)
    policy = aggregate(per_token, mask, weights)
    kl_per_token = k3_kl(logp, ref_logp) if ref_logp is not None else None
    loss = policy if kl_per_token is None else policy + kl_coef * aggregate(kl_per_token, mask, weights)
    with torch.no_grad():
        counted = weights if stat_weights is None else stat_weights
        low, high = clipped_regions(log_ratio.exp(), advantages[:, None], clip_eps, clip_eps_high)
        stats = {
            "policy": policy.detach(),
            "kl": aggregate(kl_per_token, mask, counted) if kl_per_token is not None else torch.zeros(()),
            "clip_frac": aggregate(low + high, mask, counted),
            "clip_frac_low": aggregate(low, mask, counted),
            "clip_frac_high": aggregate(high, mask, counted),
        }
    return loss, stats
