"""token_logprobs: log softmax at the chosen tokens, chunk by chunk, without a float32 copy
of the logits, and its gradient."""

from __future__ import annotations

import pytest
import torch

from agents.trainable_lm import token_logprobs as module
from agents.trainable_lm.token_logprobs import token_logprobs


def reference(logits, targets, temperature):
    return torch.log_softmax(logits.double() / temperature, dim=-1).gather(-1, targets[..., None])[..., 0]


@pytest.fixture(params=[1 << 25, 7], ids=["one chunk", "chunks of one position"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(module, "CHUNK_ELEMENTS", request.param)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_values_and_gradient_equal_log_softmax(chunk, temperature):
    generator = torch.Generator().manual_seed(0)
    logits = (3 * torch.randn(3, 5, 11, generator=generator)).requires_grad_()
    targets = torch.randint(0, 11, (3, 5), generator=generator)
    weights = torch.randn(3, 5, generator=generator)
    ours = token_logprobs(logits, targets, temperature)
    assert ours.dtype == torch.float32 and ours.shape == (3, 5)
    (ours * weights).sum().backward()
    grad, logits.grad = logits.grad, None
    theirs = reference(logits, targets, temperature)
    (theirs * weights).sum().backward()
    assert torch.allclose(ours.double(), theirs, atol=1e-5)
    assert torch.allclose(grad.double(), logits.grad.double(), atol=1e-6)


def test_gradcheck_in_float64(chunk):
    logits = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[0, 5, 2], [1, 1, 4]])
    assert torch.autograd.gradcheck(lambda z: token_logprobs(z, targets, 0.5), (logits,))


def test_bfloat16_logits_score_in_float32_and_get_a_bfloat16_gradient():
    logits = (4 * torch.randn(2, 4, 50)).bfloat16().requires_grad_()
    targets = torch.randint(0, 50, (2, 4))
    ours = token_logprobs(logits, targets, 0.9)
    assert ours.dtype == torch.float32
    assert torch.allclose(ours.double(), reference(logits.detach(), targets, 0.9), atol=1e-5)  # the bf16 values, exactly scored
    ours.sum().backward()
    assert logits.grad.dtype == torch.bfloat16
    assert torch.allclose(logits.grad.sum(-1).float(), torch.zeros(2, 4), atol=1e-2)  # sum_v (onehot - pi) = 0


def test_mismatched_targets_are_refused():
    with pytest.raises(ValueError, match="without the vocabulary axis"):
        token_logprobs(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
    for outside in (-100, 5):  # TRL's ignore index; past the vocabulary
        with pytest.raises(ValueError, match=r"token ids in \[0, 5\)"):
            token_logprobs(torch.zeros(2, 3, 5), torch.full((2, 3), outside))


def saved_bytes(function, logits, targets):
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel() * t.element_size()) or t, lambda t: t):
        function(logits, targets)
    return sum(saved)


def test_the_backward_pass_keeps_the_logits_and_no_float32_copy():
    logits = torch.randn(2, 8, 1000).bfloat16().requires_grad_()
    targets = torch.randint(0, 1000, (2, 8))
    ours = saved_bytes(lambda z, t: token_logprobs(z, t, 0.7), logits, targets)
    old = lambda z, t: torch.log_softmax(z.float() / 0.7, dim=-1).gather(-1, t[..., None])  # the scoring of 0.2
    float32_copy = saved_bytes(old, logits, targets)
    assert ours == logits.numel() * 2 + targets.numel() * 8
    assert float32_copy > 2 * ours  # what the loss kept before


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_the_backward_pass_fills_the_entropies_without_changing_the_gradient(dtype):
    """``losses/entropy``: from the softmax the backward pass computes anyway, so the forward
    pass makes no second exponential of the logits."""
    torch.manual_seed(0)
    logits = (3 * torch.randn(2, 5, 33)).to(dtype).requires_grad_()
    targets = torch.randint(0, 33, (2, 5))
    weights = torch.rand(2, 5)
    entropies = torch.full((2, 5), float("nan"), dtype=torch.float64)
    (token_logprobs(logits, targets, 0.7, entropies) * weights).sum().backward()
    with_entropies, logits.grad = logits.grad, None
    (token_logprobs(logits, targets, 0.7) * weights).sum().backward()
    torch.testing.assert_close(with_entropies, logits.grad)
    reference = torch.log_softmax(logits.detach().double() / 0.7, dim=-1)
    torch.testing.assert_close(entropies, -(reference.exp() * reference).sum(-1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="entropies"):
        token_logprobs(logits, targets, entropies=torch.empty(3))
