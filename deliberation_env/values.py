"""Checks of arguments shared by both env families: numbers (Python or NumPy, never a bool)
and the keys of an action dict."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_action_keys(actions: Any, agents: Sequence[str]) -> None:
    """Raise unless ``actions`` is a dict keyed by exactly ``agents`` (naming what is wrong)."""
    if not isinstance(actions, dict):
        raise TypeError(f"actions must be a dict keyed by agent, got {type(actions).__name__}")
    missing = [a for a in agents if a not in actions]
    extra = [a for a in actions if a not in agents]
    if missing or extra:
        raise ValueError(f"actions must have exactly the agents {list(agents)}: missing {missing}, unknown {extra}")
