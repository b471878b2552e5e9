"""Fixtures of the coding protocol's tests: the protocol on HumanEval and its problem 8."""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.text import CodingProtocol

CODING_PROBLEM = "HumanEval/8"
"""sum_product(numbers) -> (sum, product); 5 tests."""


@pytest.fixture(scope="module")
def protocol():
    """The coding protocol on HumanEval, one per test module (its verdict cache included)."""
    return CodingProtocol(tasks.get("humaneval"))


@pytest.fixture(scope="module")
def problem(protocol):
    """:data:`CODING_PROBLEM` (a module that defines its own ``protocol`` and ``problem`` overrides both)."""
    return next(p for p in protocol.problems("test") if p.id == CODING_PROBLEM)
