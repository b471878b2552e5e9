"""The clipping range of the importance ratio, shared by both families' clipped losses
(:mod:`algorithms.meta.losses`, :mod:`algorithms.text.losses`): :math:`[1 - \\epsilon,
1 + \\epsilon_{high}]`, with :math:`\\epsilon_{high} = \\epsilon` unless given (DAPO's
clip-higher)."""

from __future__ import annotations

import torch


def clip_ratio(ratio: torch.Tensor, clip_eps: float, clip_eps_high: float | None = None) -> torch.Tensor:
    """``ratio`` clamped to [1 - clip_eps, 1 + clip_eps_high] (``clip_eps_high`` None: ``clip_eps``).

    >>> clip_ratio(torch.tensor([0.7, 1.0, 1.25, 1.3]), 0.2, 0.28)
    tensor([0.8000, 1.0000, 1.2500, 1.2800])
    """
    return torch.clamp(ratio, 1.0 - clip_eps, 1.0 + (clip_eps if clip_eps_high is None else clip_eps_high))


def clipped_regions(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_eps: float, clip_eps_high: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Where the clipped surrogate :math:`\min(\rho A, \operatorname{clip}(\rho) A)` takes the
    clipped value, so the sample's gradient is 0 (TRL's ``clip_ratio/low_mean`` and
    ``high_mean``): below the range with :math:`A < 0`, above it with :math:`A > 0`; as 0/1
    floats of ``ratio``'s shape (``advantages`` broadcast against it).

    >>> low, high = clipped_regions(torch.tensor([0.7, 0.7, 1.3, 1.3]), torch.tensor([-1.0, 1.0, 1.0, -1.0]), 0.2, 0.28)
    >>> low.tolist(), high.tolist()
    ([1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0])
    """
    upper = clip_eps if clip_eps_high is None else clip_eps_high
    low = (ratio < 1.0 - clip_eps) & (advantages < 0)
    high = (ratio > 1.0 + upper) & (advantages > 0)
    return low.float(), high.float()
