"""The docstring examples of the pure functions are correct (they are documentation)."""

import doctest

import pytest

import algorithms.advantages
import algorithms.losses


@pytest.mark.parametrize("module", [algorithms.advantages, algorithms.losses])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
