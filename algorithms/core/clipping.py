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


def clipped_share(ratio: torch.Tensor, clip_eps: float, clip_eps_high: float | None = None) -> torch.Tensor:
    """1.0 where ``ratio`` lies outside [1 - clip_eps, 1 + clip_eps_high], else 0.0.

    >>> clipped_share(torch.tensor([0.7, 1.0, 1.25, 1.3]), 0.2, 0.28)
    tensor([1., 0., 0., 1.])
    """
    return (clip_ratio(ratio, clip_eps, clip_eps_high) != ratio).float()
