"""A coding team scored as the coding protocol's tests score one: the reward checked
against its parts by hand (CoMLRL's weights), shared by ``test_text_coding.py`` and
``test_coding_wrapper_escapes.py``."""

from __future__ import annotations

import pytest

from deliberation_env.text.protocols.coding import WEIGHTS

FENCE = "`" * 3


def fenced(code: str) -> str:
    """``code`` in a ```` ```python ```` block, as an agent writes it."""
    return f"{FENCE}python\n{code}{FENCE}"


def reward_of(parts: dict[str, float]) -> float:
    """CoMLRL's level reward by hand: the parts weighted by :data:`WEIGHTS`."""
    return sum(WEIGHTS[name] * value for name, value in parts.items())


def score(protocol, problem, helper: str, main: str):
    """The protocol's outcome for the team's two texts, its reward checked against its parts."""
    outcome = protocol.score(problem, [helper, main])
    assert outcome.reward == pytest.approx(reward_of(outcome.parts))
    return outcome
