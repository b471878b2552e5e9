"""Meta-actions and the observation layout (shared by the parallel and vector envs)."""

from __future__ import annotations

import enum
import string

from gymnasium import spaces

from agents.profile import PROFILE_FEATURES, PROFILE_SIZE


class MetaAction(enum.IntEnum):
    """The meta-cognitive action of one agent in one round."""

    PERSIST = 0
    """Keep the current answer."""
    REFINE = 1
    """Re-solve given one's previous solution and the peers' answers and confidences."""
    CONCEDE = 2
    """Adopt a peer's differing answer (the most confident one, by default)."""


N_ACTIONS = len(MetaAction)
ACTION_NAMES = tuple(action.name.lower() for action in MetaAction)
"""``("persist", "refine", "concede")``: the actions as metric keys and table columns name them."""

SELF_FEATURES = (
    "confidence",
    "peer_agree_share",
    "is_plurality",
    "parse_ok",
    "changed_last_round",
    "round_frac",
) + tuple(f"profile_{name}" for name in PROFILE_FEATURES)
"""Columns of ``obs["self"]``."""

PEER_FEATURES = (
    "confidence",
    "agrees_with_me",
    "decision_share",
    "parse_ok",
    "changed_last_round",
) + tuple(f"profile_{name}" for name in PROFILE_FEATURES)
"""Columns of each row of ``obs["peers"]``."""

assert len(SELF_FEATURES) == 6 + PROFILE_SIZE and len(PEER_FEATURES) == 5 + PROFILE_SIZE



def flat_features(n_agents: int) -> tuple[str, ...]:
    """Names of the ``observation="flat"`` entries, by index: ``self/<feature>`` for the
    :data:`SELF_FEATURES`, then ``peer_<k>/<feature>`` for the :data:`PEER_FEATURES` of the
    k-th peer row (k = 1 .. n-1, relative order i+1, i+2, ... mod n)."""
    names = [f"self/{name}" for name in SELF_FEATURES]
    for k in range(1, n_agents):
        names += [f"peer_{k}/{name}" for name in PEER_FEATURES]
    return tuple(names)


TEXT_CHARSET = frozenset(string.printable)
"""Characters of the text observation; others are replaced by ``?``."""
TEXT_MAX_LENGTH = 16_384


def observation_space(n_agents: int, observation: str) -> spaces.Dict | spaces.Box:
    """The observation space of one agent (identical for all agents).

    A ``Dict`` for ``"vector"``, ``"text"`` and ``"both"``; for ``"flat"`` one float32
    ``Box(0, 1, (len(flat_features(n_agents)),))`` (the ``self`` row, then the peer rows flattened).
    """
    if observation == "flat":
        return spaces.Box(0.0, 1.0, shape=(len(flat_features(n_agents)),), dtype="float32")
    parts: dict[str, spaces.Space] = {}
    if observation in ("vector", "both"):
        parts["self"] = spaces.Box(0.0, 1.0, shape=(len(SELF_FEATURES),), dtype="float32")
        parts["peers"] = spaces.Box(0.0, 1.0, shape=(n_agents - 1, len(PEER_FEATURES)), dtype="float32")
    if observation in ("text", "both"):
        parts["text"] = spaces.Text(max_length=TEXT_MAX_LENGTH, min_length=0, charset=TEXT_CHARSET)
    return spaces.Dict(parts)


def action_space() -> spaces.Discrete:
    """PERSIST, REFINE, CONCEDE."""
    return spaces.Discrete(N_ACTIONS)
