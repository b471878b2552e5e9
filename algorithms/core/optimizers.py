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
from collections.abc import Callable, Iterable, Mapping
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



class MasterWeights:
    r"""An optimizer that steps float32 master copies of 16-bit weights: mixed precision
    for full fine-tuning in bfloat16, as transformers' ``Trainer`` and DeepSpeed keep it.

    Adam's step :math:`\eta \, \hat m / (\sqrt{\hat v} + \epsilon)` is about the learning
    rate; a bfloat16 weight near 1 has a rounding step of :math:`2^{-7}`, so stepped itself it
    loses every step under :math:`2^{-8}` (at a learning rate of 1e-5, all of them). Here the
    forward and backward passes run in 16 bits, and each step

    .. math::

        g^{32} = \mathrm{float32}(g^{16}), \quad
        w^{32} \leftarrow \mathrm{Adam}(w^{32}, g^{32}), \quad
        w^{16} \leftarrow \mathrm{round}_{16}(w^{32}),

    so the small steps add up in :math:`w^{32}` until they move :math:`w^{16}`. Memory: 12
    bytes per weight more than the 16-bit weight and gradient (the float32 copy and Adam's
    two float32 moments), the same 16 bytes per weight as float32 training, with 16-bit
    compute and activations.

    It quacks as the ``torch.optim`` optimizer the learners use: ``param_groups`` (the
    masters', for the learning-rate schedule), ``zero_grad``, ``step``, ``state_dict`` (Adam's,
    with each weight's master beside its moments as ``master``: a checkpoint's optimizer
    state holds it) and ``load_state_dict`` (a state without masters, from a run that
    stepped the 16-bit weights, starts them from the weights).

    Args:
        parameters: The 16-bit weights, in a fixed order (the checkpoint's).
        make_optimizer: Builds the optimizer of the float32 masters (:func:`adam`).
    """

    def __init__(
        self, parameters: Iterable[torch.nn.Parameter], make_optimizer: Callable[[list[torch.Tensor]], torch.optim.Optimizer]
    ) -> None:
        self.weights = list(parameters)
        self.masters = [weight.detach().float().clone() for weight in self.weights]
        self.optimizer = make_optimizer(self.masters)
        self._weight_of = {id(master): weight for master, weight in zip(self.masters, self.weights, strict=True)}

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The masters' parameter groups (the learning rate is set here)."""
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the 16-bit weights' gradients."""
        for weight in self.weights:
            weight.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """Step the masters on the weights' gradients, in float32, and round them into the weights."""
        for weight, master in zip(self.weights, self.masters, strict=True):
            master.grad = None if weight.grad is None else weight.grad.float()
        self.optimizer.step()
        for weight, master in zip(self.weights, self.masters, strict=True):
            if master.grad is not None:  # a weight without gradient is not stepped (an agent with no rows)
                weight.copy_(master)
                master.grad = None

    def _ordered(self) -> list[torch.Tensor]:
        """The masters in the order of the state dict's indices (group by group)."""
        return [master for group in self.optimizer.param_groups for master in group["params"]]

    def state_dict(self) -> dict[str, Any]:
        """Adam's state of the masters, each master as its weight's ``master`` entry."""
        state = self.optimizer.state_dict()
        moments = state["state"]
        state["state"] = {index: {**moments.get(index, {}), "master": master} for index, master in enumerate(self._ordered())}
        return state

    @torch.no_grad()
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output; a weight without a saved master (a run that
        stepped the 16-bit weights) starts its master from the weight, which must be
        restored first."""
        saved = {index: entries.get("master") for index, entries in state["state"].items()}
        self.optimizer.load_state_dict({**state, "state": without_masters(state["state"])})
        for index, master in enumerate(self._ordered()):
            master.copy_(saved[index] if saved.get(index) is not None else self._weight_of[id(master)])


def without_masters(moments: Mapping[Any, Mapping[str, Any]]) -> dict[Any, dict[str, Any]]:
    """An optimizer state's per-weight entries without :class:`MasterWeights`' ``master``
    (a run that steps its 16-bit weights again resumes from its moments)."""
    return {index: {name: value for name, value in entries.items() if name != "master"} for index, entries in moments.items()}
