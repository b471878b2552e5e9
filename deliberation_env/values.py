"""What counts as a number in an argument: Python or NumPy numbers, never a bool."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
