"""What both families' PettingZoo parallel envs (``de.parallel_env``, ``de.text_env``) do
alike around an episode: check the render mode, render the episode's table, and end a step
(every live agent terminates when the episode ends; an ended episode has no agents left)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

RENDER_MODES = ("ansi", "human")
"""The render modes of both envs: ``"ansi"`` returns the table, ``"human"`` prints it."""


def check_render_mode(render_mode: str | None) -> str | None:
    """``render_mode`` if it is None or one of :data:`RENDER_MODES`, else a ``ValueError``."""
    if render_mode not in (None, *RENDER_MODES):
        raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
    return render_mode


def render_table(render_mode: str | None, started: bool, table: Callable[[], str]) -> str | None:
    """The episode's ``table()``: returned with ``"ansi"``, printed with ``"human"`` (which
    returns None); None without a render mode or before the first reset."""
    if render_mode is None or not started:
        return None
    if render_mode == "human":
        print(table())
        return None
    return table()


def end_step(
    env: Any, observations: dict[str, Any], rewards: dict[str, float], ended: bool, infos: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
    """The parallel API's step result for ``env.agents``, the agents that acted: each
    terminates when the episode ``ended`` (none is truncated: the round or turn budget ends
    an episode by termination), and an ended episode leaves ``env.agents`` empty.

    Returns:
        ``(observations, rewards, terminations, truncations, infos)``.
    """
    agents: Sequence[str] = env.agents
    if ended:
        env.agents = []
    return observations, rewards, {a: ended for a in agents}, {a: False for a in agents}, infos
