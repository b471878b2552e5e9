r"""The log-probabilities of chosen tokens from a model's logits, without a float32 copy of
the logits: the loss's largest tensor.

``log_softmax(logits.float() / T).gather(targets)`` keeps an (N, T, V) float32 tensor for
the backward pass and makes another on the way: 1.2 GB each for 8 sequences of 256 tokens
over Qwen2.5's 151,936-token vocabulary, where the bfloat16 logits take 0.6 GB.
:func:`token_logprobs` computes in float32 a chunk of positions at a time and keeps only
the logits (which the model's output already holds):

.. math::

    \log \pi(y_t) = \frac{z_{t, y_t}}{T} - \operatorname{logsumexp}_v \frac{z_{t, v}}{T},
    \qquad
    \frac{\partial \log \pi(y_t)}{\partial z_{t, v}} = \frac{1}{T}
        \left( [v = y_t] - \pi_t(v) \right),

the backward pass recomputing :math:`\pi_t = \mathrm{softmax}(z_t / T)` a chunk at a
time (TRL's ``selective_log_softmax`` loops over sequences to the same end). On two CPU
cores it takes 1% (float32) to 6% (bfloat16) longer than the float32 copy for SmolLM2's
vocabulary (BENCHMARKS.md, "The loss's logits").
"""

from __future__ import annotations

import torch

CHUNK_ELEMENTS = 1 << 25
"""Logits per chunk in float32 (128 MiB): the most the computation adds at once."""


def token_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0, entropies: torch.Tensor | None = None
) -> torch.Tensor:
    r"""``log softmax(logits / temperature)`` at ``targets``, in float32 (module docstring).

    Args:
        logits: (..., V) in any floating dtype; position k scores the token ``targets[k]``.
        targets: (...) token ids in [0, V), the shape of ``logits`` without its last axis.
        temperature: T > 0.
        entropies: A float tensor of ``targets``' shape that the backward pass fills with each
            position's entropy, :math:`H_t = \operatorname{logsumexp}_v z_{t,v} - \sum_v
            \pi_t(v)\, z_{t,v}` with :math:`z = \mathrm{logits} / T` (from the softmax the
            backward pass computes anyway: one dot product per position, no second
            exponential); left as it is without a backward pass.

    Returns:
        (...) float32 log-probabilities (float64 for float64 logits), differentiable with
        respect to ``logits``.

    Raises:
        ValueError: On targets of another shape, or outside the vocabulary.

    >>> logits = torch.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
    >>> entropies = torch.empty(1)
    >>> logp = token_logprobs(logits, torch.tensor([0]), entropies=entropies)
    >>> torch.allclose(logp, torch.log_softmax(logits, -1)[:, 0])
    True
    >>> logp.sum().backward()
    >>> p = torch.softmax(logits.detach(), -1)
    >>> torch.allclose(entropies, -(p * p.log()).sum(-1))
    True
    """
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"targets {tuple(targets.shape)} must be logits {tuple(logits.shape)} without the vocabulary axis")
    if targets.numel() and bool(((targets < 0) | (targets >= logits.shape[-1])).any()):  # not a device assert
        raise ValueError(
            f"targets must be token ids in [0, {logits.shape[-1]}) (no ignore index such as -100: pad with any id "
            "and leave the padding out of the loss)"
        )
    if entropies is not None and (entropies.shape != targets.shape or not entropies.is_contiguous()):
        raise ValueError(
            f"entropies must be a contiguous tensor of the targets' shape {tuple(targets.shape)}, got "
            f"{tuple(entropies.shape)}{'' if entropies.is_contiguous() else ', not contiguous'}"
        )
    return _TokenLogprobs.apply(logits, targets, float(temperature), entropies)


def _positions_per_chunk(vocabulary: int) -> int:
    """Positions of :data:`CHUNK_ELEMENTS` logits (at least one)."""
    return max(1, CHUNK_ELEMENTS // max(vocabulary, 1))


class _TokenLogprobs(torch.autograd.Function):
    """:func:`token_logprobs`'s forward and backward passes, chunk by chunk (the backward
    pass recomputes a chunk's softmax rather than keeping it, and from it the entropies)."""

    @staticmethod
    def forward(
        ctx, logits: torch.Tensor, targets: torch.Tensor, temperature: float, entropies: torch.Tensor | None
    ) -> torch.Tensor:
        flat, chosen = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1, 1)
        exact = torch.promote_types(logits.dtype, torch.float32)  # float32, float64 for float64
        logp = torch.empty(flat.shape[0], dtype=exact, device=logits.device)
        step = _positions_per_chunk(flat.shape[1])
        for start in range(0, flat.shape[0], step):
            rows = slice(start, start + step)
            logp[rows] = torch.log_softmax(_scaled(flat[rows], exact, temperature), dim=-1).gather(1, chosen[rows])[:, 0]
        ctx.save_for_backward(logits, targets, logp if entropies is not None else None)
        ctx.temperature, ctx.exact, ctx.entropies = temperature, exact, entropies
        return logp.reshape(targets.shape)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_logp: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        logits, targets, logp = ctx.saved_tensors
        flat, chosen = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1, 1)
        weight = grad_logp.reshape(-1, 1).to(ctx.exact) / ctx.temperature
        grad = torch.empty_like(flat)
        entropies = None if ctx.entropies is None else ctx.entropies.view(-1)
        step = _positions_per_chunk(flat.shape[1])
        for start in range(0, flat.shape[0], step):
            rows = slice(start, start + step)
            scaled = _scaled(flat[rows], ctx.exact, ctx.temperature)
            probabilities = torch.softmax(scaled, dim=-1)
            if entropies is not None:  # logsumexp z = z_y - log pi(y), then minus the expected z
                logsumexp = scaled.gather(1, chosen[rows])[:, 0] - logp[rows]
                expected = torch.bmm(probabilities.unsqueeze(1), scaled.unsqueeze(2)).view(-1)  # a dot per row, no temporary
                entropies[rows] = (logsumexp - expected).to(entropies.dtype)
            grad[rows] = probabilities.mul_(-weight[rows]).scatter_add_(1, chosen[rows], weight[rows])
        return grad.reshape(logits.shape), None, None, None


def _scaled(logits: torch.Tensor, dtype: torch.dtype, temperature: float) -> torch.Tensor:
    """``logits / temperature`` in ``dtype`` (no copy where there is nothing to do)."""
    logits = logits.to(dtype)
    return logits if temperature == 1 else logits / temperature
