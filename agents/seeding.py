"""Deterministic seeds and counter-based random numbers.

Every request carries a seed derived from (episode seed, problem, agent, round), so the
same history gives the same output: G rollouts of one problem share round 0 and differ
only where their actions differ (common random numbers for group-relative learners).
"""

from __future__ import annotations

import hashlib

import numpy as np

_MASK63 = (1 << 63) - 1


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any printable parts, stable across processes and platforms.

    >>> derive_seed(0, "arith-test-5", 1, 2) == derive_seed(0, "arith-test-5", 1, 2)
    True
    >>> derive_seed(0, "p", 1, 2) != derive_seed(0, "p", 2, 1)
    True
    """
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK63


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise on uint64 (a counter-based hash)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniforms(seeds: np.ndarray, stream: int) -> np.ndarray:
    """Uniform floats in (0, 1), one per seed, for a numbered random stream.

    The same (seed, stream) always gives the same number; different streams of one seed
    are independent for practical purposes.
    """
    with np.errstate(over="ignore"):
        mixed = np.asarray(seeds, dtype=np.uint64) * np.uint64(0xD1342543DE82EF95) + np.uint64(stream)
    bits = splitmix64(splitmix64(mixed)) >> np.uint64(11)  # 53 random bits
    return (bits.astype(np.float64) + 0.5) / float(1 << 53)


def turn_seeds(base: np.ndarray, agents: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """Per-turn seeds from per-episode base seeds, agent indices and rounds (vectorized).

    ``base`` is ``derive_seed(episode_seed, problem_id)``; the result depends on exactly
    (episode seed, problem, agent, round).
    """
    with np.errstate(over="ignore"):
        counter = np.asarray(agents, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.asarray(
            rounds, dtype=np.uint64
        ) * np.uint64(0xC2B2AE3D27D4EB4F)
    return splitmix64(np.asarray(base, dtype=np.uint64) ^ counter) >> np.uint64(1)
