"""Fixtures of the task tests."""

from __future__ import annotations

import pytest

from deliberation_env.tasks import math as math_task


@pytest.fixture
def fresh_readings(monkeypatch):
    """Readings, comparisons and time-out counts of the MATH task of this test's own: none it
    made (under a stub) is served to another test, and none of another's to it."""
    monkeypatch.setattr(math_task, "_timed_out", {})
    math_task._cached_reading.cache_clear()
    math_task._equivalent_in_time.cache_clear()
    yield
    math_task._cached_reading.cache_clear()
    math_task._equivalent_in_time.cache_clear()
