"""The sampling support every backend draws from: temperature, then top-k, then top-p."""

import numpy as np
import pytest
import torch

from agents.sampling import sampling_support
from agents.transformers_backend import _sample


def support_by_definition(logits, temperature, top_k, top_p):
    """The docstring's definition, written plainly: sort everything, cut twice."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    order = np.argsort(-z, kind="stable")
    if top_k:
        order = order[:top_k]
    probs = np.exp(z[order] - z[order].max())
    probs /= probs.sum()
    before = np.cumsum(probs) - probs
    return set(order[before < top_p].tolist())


SETTINGS = [(0.3, 0, 0.95), (1.0, 0, 0.95), (1.0, 50, 0.9), (2.0, 0, 0.99), (0.7, 5, 1.0), (1.5, 1, 0.5), (1.0, 0, 1.0)]


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), SETTINGS)
@pytest.mark.parametrize("seed", range(3))
def test_the_support_matches_its_definition(temperature, top_k, top_p, seed):
    logits = np.random.default_rng(seed).normal(scale=2.0, size=3000)
    mask = sampling_support(logits, temperature, top_k, top_p)
    assert set(np.flatnonzero(mask).tolist()) == support_by_definition(logits, temperature, top_k, top_p)


def test_a_nucleus_wider_than_the_probe_is_found_whole():
    logits = np.zeros(1000)  # flat: a token is kept while the mass before it, j / 1000, is below top-p
    assert sampling_support(logits, 1.0, 0, 0.9005).sum() == 901
    assert sampling_support(logits, 1.0, 300, 0.9005).sum() == 271  # top-p of the renormalized top-k: j / 300


def test_the_temperature_comes_before_top_p():
    """llama.cpp's own chain cuts at top-p before tempering; the request's order tempers first."""
    logits = np.log([0.6, 0.3, 0.1])
    assert sampling_support(logits, 1.0, 0, 0.95).tolist() == [True, True, True]
    assert sampling_support(logits, 0.3, 0, 0.95).tolist() == [True, True, False]


def test_top_k_beyond_the_vocabulary_keeps_everything_and_bad_settings_are_named():
    assert sampling_support(np.arange(4.0), 1.0, 10, 1.0).all()
    for settings in [(0.0, 0, 0.9), (1.0, -1, 0.9), (1.0, 0, 0.0), (1.0, 0, 1.5)]:
        with pytest.raises(ValueError, match="need temperature > 0"):
            sampling_support(np.arange(4.0), *settings)


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(0.3, 0, 0.95), (1.0, 8, 0.9), (2.0, 0, 0.8), (1.0, 1, 1.0)])
def test_the_torch_sampler_draws_exactly_the_support(temperature, top_k, top_p):
    """Inverting the CDF on a fine grid of uniforms reaches every token of the support and no other."""
    logits = torch.tensor(np.random.default_rng(7).normal(scale=1.5, size=40), dtype=torch.float32)
    grid = torch.linspace(0, 1, 20001)[:-1]
    rows = len(grid)
    drawn = _sample(
        logits.expand(rows, -1),
        torch.full((rows,), temperature),
        torch.full((rows,), top_p),
        grid,
        torch.full((rows,), top_k),
    )
    expected = np.flatnonzero(sampling_support(logits.numpy(), temperature, top_k, top_p))
    assert set(drawn.tolist()) == set(expected.tolist())
