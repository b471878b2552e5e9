"""Checks of arguments shared by both env families: numbers (Python or NumPy, never a bool),
the keys of an action dict and an agent's name."""

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


def check_agent(agent: Any, possible_agents: Sequence[str]) -> None:
    """Raise a ``KeyError`` naming the agents unless ``agent`` is one of ``possible_agents``
    (``observation_space("agent_9")`` of a team of three returned a space)."""
    if agent not in possible_agents:
        raise KeyError(f"no agent {agent!r}: the agents are {list(possible_agents)}")
