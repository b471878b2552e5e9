"""Checks and group helpers that both families' learners share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def per_agent_groups(
    advantages: Callable[[torch.Tensor], torch.Tensor], returns: torch.Tensor
) -> torch.Tensor:
    """Apply a group advantage function (groups, G) -> (groups, G) to every agent's returns
    separately: each agent's G returns of a problem form one group, and what a function
    takes from the whole batch (GRPO's ``scale_rewards="batch"``) is that agent's batch.

    Args:
        advantages: E.g. :func:`~algorithms.core.advantages.grpo_advantages`.
        returns: (B, G, n_agents).

    Returns:
        Advantages of shape (B, G, n_agents).
    """
    import torch  # here: the configs import this module without torch

    return torch.stack([advantages(returns[:, :, agent]) for agent in range(returns.shape[2])], dim=2)


def check_positive(config: Any, *names: str, infinite: tuple[str, ...] = ()) -> None:
    """Raise a ``ValueError`` naming the first of ``names`` whose config value is not a
    finite number > 0 (NaN too: every comparison with it is false, so a NaN setting would
    silently switch off what it weighs); those in ``infinite`` may be infinite (a gradient
    norm that never clips)."""
    for name in names:
        value = getattr(config, name)
        if not (value > 0 and (name in infinite or value < math.inf)):
            raise ValueError(f"{type(config).__name__}.{name} must be > 0 and finite, got {value!r}")
