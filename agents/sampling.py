"""The tokens a sampled request may draw: temperature, then top-k, then top-p.

One definition for every backend (:class:`agents.base.GenerationRequest`), the order of
``transformers``' ``generate``, vLLM and CTranslate2. llama.cpp's own sampler chain applies
the temperature last, after top-p, which would make a request's nucleus that of the
untempered distribution (at temperature 0.3, a larger set); :class:`agents.LlamaCppBackend`
therefore masks the logits with :func:`sampling_support` and lets llama.cpp only temper
and draw.
"""

from __future__ import annotations

import numpy as np

AGENT_TEMPERATURE = 0.7
"""A deliberating agent's sampling temperature unless its spec or request gives one
(:class:`agents.base.GenerationRequest`, :class:`agents.LLMAgent`, :class:`agents.TextPolicy`)."""
POLICY_TEMPERATURE = 1.0
"""The LLM-weight learners' sampling temperature unless ``--temperature`` gives one: the
policy sampled as it is (:class:`algorithms.text.config.TextLearnerConfig`, and the
samplers and scorers it drives, :class:`agents.TrainableLM`, the CTranslate2 sampler)."""

PROBE = 64
"""Most likely tokens sorted first; the whole vocabulary only when their mass is short of top-p."""


def sampling_support(logits: np.ndarray, temperature: float, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """The tokens a request may sample, as a boolean mask over the vocabulary.

    With z = logits / temperature, K the ``top_k`` tokens of largest z (every token when
    ``top_k`` is 0 or at least the vocabulary) and p_i = exp(z_i) / sum_{j in K} exp(z_j)
    for i in K, sorted so that p_(1) >= p_(2) >= ..., the support is {(1), ..., (m)} with
    m the least index such that p_(1) + ... + p_(m) >= top_p: a token is kept when the mass
    of the tokens before it is below ``top_p``, so the most likely token always is.

    Args:
        logits: One row of next-token logits.
        temperature: Sampling temperature, > 0.
        top_k: Tokens kept by likelihood before top-p; 0 keeps all.
        top_p: Nucleus mass in (0, 1].

    Raises:
        ValueError: On a temperature <= 0, a negative ``top_k`` or ``top_p`` outside (0, 1].
    """
    if temperature <= 0 or top_k < 0 or not 0 < top_p <= 1:
        raise ValueError(
            f"need temperature > 0, top_k >= 0 and top_p in (0, 1], got {temperature}, {top_k}, {top_p}"
        )
    z = np.asarray(logits, dtype=np.float64) / temperature
    size = z.shape[-1]
    k = size if top_k == 0 else min(top_k, size)
    candidates = np.argpartition(-z, k - 1)[:k] if k < size else np.arange(size)
    keep = np.zeros(size, dtype=bool)
    if top_p >= 1:
        keep[candidates] = True
        return keep
    kept = z if k == size else z[candidates]
    peak = kept.max()
    log_total = peak + np.log(np.exp(kept - peak).sum())
    probe = candidates if k <= PROBE else candidates[np.argpartition(-kept, PROBE - 1)[:PROBE]]
    ranked, inside = _ranked_nucleus(z, probe, log_total, top_p)
    if inside.all() and len(probe) < k:  # the nucleus may go on past the probe
        ranked, inside = _ranked_nucleus(z, candidates, log_total, top_p)
    keep[ranked[inside]] = True
    return keep


def _ranked_nucleus(
    z: np.ndarray, pool: np.ndarray, log_total: float, top_p: float
) -> tuple[np.ndarray, np.ndarray]:
    """``pool`` from the most likely token down, and which of them the mass before is below ``top_p``."""
    ranked = pool[np.argsort(-z[pool], kind="stable")]
    probs = np.exp(z[ranked] - log_total)
    return ranked, np.cumsum(probs) - probs < top_p
