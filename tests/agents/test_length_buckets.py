"""The CTranslate2 backend's sub-batches: prompts of similar lengths together, the cheapest cut."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agents.ctranslate2_backend import PREFILL_COST, STEP_OVERHEAD, length_buckets


def cost(lengths, bucket, new_tokens):
    low, high = min(lengths[i] for i in bucket), max(lengths[i] for i in bucket)
    return PREFILL_COST * len(bucket) * low + (high - low + new_tokens) * (STEP_OVERHEAD + len(bucket))


def test_far_apart_lengths_split_and_near_ones_stay_together():
    # by hand (k = 19, rho = 0.6): one batch 0.6*4*10 + (90+4)*(19+4) = 2186;
    # {10,12} {98,100}: 12 + 6*21 + 117.6 + 6*21 = 381.6; {10,12} {98} {100}: 416.8; four alone: 452
    assert length_buckets([100, 10, 12, 98], new_tokens=4) == [[1, 2], [3, 0]]
    assert length_buckets([7, 7, 7], new_tokens=64) == [[0, 1, 2]]
    assert length_buckets([], new_tokens=8) == []


def test_the_cut_is_the_cheapest_of_every_cut_of_the_sorted_batch():
    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = [int(x) for x in rng.integers(50, 400, size=8)]
        lengths[3] = lengths[5]  # ties too
        new_tokens = int(rng.integers(1, 256))
        got = length_buckets(lengths, new_tokens)
        assert sorted(i for bucket in got for i in bucket) == list(range(8))
        order = sorted(range(8), key=lambda i: (lengths[i], i))
        cheapest = min(
            sum(cost(lengths, order[a:b], new_tokens) for a, b in itertools.pairwise((0, *cuts, 8)))
            for k in range(8)
            for cuts in itertools.combinations(range(1, 8), k)
        )
        assert sum(cost(lengths, bucket, new_tokens) for bucket in got) == pytest.approx(cheapest)
        assert all(lengths[i] < lengths[j] for a, b in itertools.pairwise(got) for i in a for j in b)
