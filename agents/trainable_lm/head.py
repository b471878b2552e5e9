r"""The output layer in float32 on a 16-bit model (TRL's ``cast_lm_head_to_fp32``, the
ScaleRL recipe's): :func:`cast_head_to_float32`.

In bfloat16 the logits themselves carry about three significant digits (8 bits of
mantissa), so :math:`\log \pi` and the policy ratio :math:`\pi / \pi_{old}` of the loss
move by rounding alone, however exactly the log-softmax is then computed in float32
(:mod:`agents.trainable_lm.token_logprobs`). Here the output layer's product runs in
float32: the hidden states and the weight are upcast where it is computed, and the
logits come out in float32.

The weight itself is not cast: a model whose output layer shares its matrix with the
input embedding (SmolLM2 and Qwen's small models tie them) keeps its embedding as it was,
in its dtype, and a checkpoint, a digest or a merged adapter reads the same weights. The
autograd function keeps the 16-bit hidden states and weight for the backward pass, not
float32 copies: a float32 copy of the weight (a vocabulary by the width: 0.9 GB for
Qwen2.5-1.5B) exists only while one product runs. The logits, in float32, take twice the
memory of bfloat16's while the loss keeps them (BENCHMARKS.md, "The loss's logits").
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

HALF_DTYPES = (torch.bfloat16, torch.float16)
"""The weights' dtypes whose output layer :func:`cast_head_to_float32` computes in float32."""


class Float32Head(torch.nn.Linear):
    """A :class:`torch.nn.Linear` output layer whose product runs in float32, whatever its
    weight's dtype (:class:`_Float32Linear`); the same parameters, so the same state dict."""

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Float32 logits of ``hidden`` (..., width)."""
        return _Float32Linear.apply(hidden, self.weight, self.bias)


class _Float32Linear(torch.autograd.Function):
    """``linear(hidden, weight, bias)`` in float32, keeping the inputs as they came for the
    backward pass (which upcasts them again) and giving gradients in their dtypes."""

    @staticmethod
    def forward(
        ctx, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        ctx.save_for_backward(hidden, weight)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return F.linear(hidden.float(), weight.float(), None if bias is None else bias.float())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        hidden, weight = ctx.saved_tensors
        grad = grad.float()
        grad_hidden = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_hidden = (grad @ weight.float()).to(hidden.dtype)
        rows = grad.reshape(-1, grad.shape[-1])
        if ctx.needs_input_grad[1]:
            grad_weight = (rows.T @ hidden.reshape(-1, hidden.shape[-1]).float()).to(weight.dtype)
        if ctx.needs_input_grad[2]:
            grad_bias = rows.sum(0).to(ctx.bias_dtype)
        return grad_hidden, grad_weight, grad_bias


def cast_head_to_float32(model: torch.nn.Module) -> bool:
    """Make ``model``'s output layer (``get_output_embeddings()``) a :class:`Float32Head`
    where its weight is 16-bit; in place, its parameters untouched (a tied embedding stays
    what it was).

    Returns:
        Whether it was made one (False for a float32 or float64 model, whose logits are
        float32 or finer already).

    Raises:
        TypeError: On an output layer that is no plain :class:`torch.nn.Linear` (one
            wrapped by an adapter: the cast comes before adapters are added).
    """
    head = model.get_output_embeddings()
    if type(head) not in (torch.nn.Linear, Float32Head):
        raise TypeError(
            f"the output layer is a {type(head).__name__}, not a torch.nn.Linear: cast_lm_head_to_fp32 "
            "computes a plain linear output layer in float32 (cast it before adapters wrap it)"
        )
    if head.weight.dtype not in HALF_DTYPES:
        return False
    head.__class__ = Float32Head
    return True
