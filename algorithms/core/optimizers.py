r"""The optimizer of both families' learners and its learning-rate schedule, from the
settings every learner shares (:class:`~algorithms.core.config.LearnerSettings`).

The optimizer is Adam, or AdamW where ``weight_decay`` > 0: decoupled weight decay on the
weight matrices only, none on biases, norm weights or other vectors (as transformers'
``Trainer`` and TRL leave them out).

The schedule is a function of the update, not a state: update :math:`u` of a run of
:math:`U` updates (``run.updates``) with :math:`W` warm-up updates steps at
:math:`\eta_u = \eta \, f(u)` (``learning_rate`` :math:`\eta`), every optimizer step of
that update alike, with

.. math::

    f(u) = \begin{cases}
        \frac{u + 1}{W + 1} & u < W \\
        1 & \text{constant} \\
        1 - p & \text{linear} \\
        \tfrac{1}{2}\,(1 + \cos \pi p) & \text{cosine}
    \end{cases}
    \qquad p = \frac{u - W}{U - W} \in [0, 1),

so no update steps at 0, and a resumed run steps where an uninterrupted one does (nothing
to save). A resume that changes ``run.updates`` stretches what is left of the decay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

from algorithms.core.config import LR_SCHEDULES


def adam(parameters: Iterable[torch.nn.Parameter], settings: Any, eps: float = 1e-8) -> torch.optim.Optimizer:
    """Adam over ``parameters`` at ``settings.learning_rate``; AdamW where
    ``settings.weight_decay`` > 0, decaying the matrices (``ndim >= 2``) only.

    Args:
        parameters: The trainable weights, in a fixed order (the checkpoint's).
        settings: A :class:`~algorithms.core.config.LearnerSettings` (``learning_rate``,
            ``weight_decay``).
        eps: Adam's epsilon.

    Returns:
        The optimizer: one parameter group without decay, or the decayed matrices' group
        and the vectors' group (each only where it has weights).
    """
    parameters = list(parameters)
    if not settings.weight_decay:
        return torch.optim.Adam(parameters, lr=settings.learning_rate, eps=eps)
    groups = [
        {"params": [p for p in parameters if p.ndim >= 2], "weight_decay": settings.weight_decay},
        {"params": [p for p in parameters if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=settings.learning_rate, eps=eps)


def learning_rate_factor(schedule: str, warmup: int, update: int, updates: int) -> float:
    """:math:`f(u)` of the module docstring: the share of the learning rate update
    ``update`` (0-based) of ``updates`` steps at.

    >>> [round(learning_rate_factor("linear", 1, u, 5), 3) for u in range(5)]
    [0.5, 1.0, 0.75, 0.5, 0.25]
    >>> [round(learning_rate_factor("cosine", 0, u, 4), 3) for u in range(4)]
    [1.0, 0.854, 0.5, 0.146]
    """
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {schedule!r}")
    if update < warmup:
        return (update + 1) / (warmup + 1)
    if schedule == "constant":
        return 1.0
    progress = (update - warmup) / max(updates - warmup, 1)
    progress = min(progress, 1.0 - 1.0 / max(updates - warmup, 1))  # past the planned run: its last rate
    return 1.0 - progress if schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))


def schedule_learning_rate(optimizer: torch.optim.Optimizer, settings: Any, update: int, updates: int) -> float:
    """Set every parameter group of ``optimizer`` to the learning rate of update ``update``
    of ``updates`` (:func:`learning_rate_factor` of ``settings.lr_schedule`` and
    ``settings.warmup_updates``, times ``settings.learning_rate``); returns it."""
    rate = settings.learning_rate * learning_rate_factor(settings.lr_schedule, settings.warmup_updates, update, updates)
    for group in optimizer.param_groups:
        group["lr"] = rate
    return rate


def loss_scaler(policy: Any) -> torch.amp.GradScaler:
    r"""Dynamic loss scaling for a policy whose weights are float16, disabled otherwise.

    float16 has 5 exponent bits: a gradient smaller than about 6e-8 flushes to 0 on its way
    back through the half-precision layers (LoRA adapters stay float32, their inputs'
    gradients do not). The backward pass runs on :math:`s L` and the step on
    :math:`\nabla L = \nabla (s L) / s`; a step whose gradient overflowed (an inf or nan) is
    skipped and :math:`s` halves, and :math:`s` doubles after 2,000 steps without one
    (``torch.amp.GradScaler``, what TRL's and transformers' ``fp16=True`` run). bfloat16
    has float32's exponent range and needs none.

    Args:
        policy: The trained policy (its ``dtype`` and ``device``; a policy without them is
            taken for float32).

    Returns:
        A ``GradScaler``, enabled only for float16 weights; disabled, each of its calls
        does nothing (``scale`` returns the loss, ``step`` steps).
    """
    device = torch.device(getattr(policy, "device", "cpu"))
    return torch.amp.GradScaler(device.type, enabled=getattr(policy, "dtype", None) == torch.float16)

