"""LLM agents and their backends.

``make_backend(name, **kwargs)`` builds a backend by name (:mod:`agents.backends` lists
them); :mod:`agents.specs` builds team members from the spec strings of the command line.

Text backends become team members through :class:`LLMAgent`; the environment wraps a
bare backend in one for you. :func:`smollm2_agent` is the default team member.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.backends import make_backend
from agents.base import (
    Answer,
    Backend,
    BackendError,
    Confidence,
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    PeerAnswer,
    PrivilegedSolver,
    ServerError,
    Solver,
    Turn,
)
from agents.cache import CachedBackend
from agents.llm_agent import LLMAgent
from agents.simulated import SimulatedTeam
from agents.specs import SMOLLM2_SAMPLING, SMOLLM2_TEMPERATURE, SMOLLM2_TOP_K, backend_from_spec
from agents.text_policy import TextPolicy


def smollm2_agent(cache: str | Path | None = None, offline: bool = False, **agent_kwargs: Any) -> LLMAgent:
    """The default team member: SmolLM2-135M-Instruct in int8 CTranslate2 (the ``smollm2``
    preset's backend, converted once from the bundled GGUF), cached in SQLite.

    Args:
        cache: The response cache file (default :data:`agents.cache.DEFAULT_CACHE_PATH`).
        offline: Serve every request from the cache; a miss is an error.
        **agent_kwargs: Overrides of :class:`LLMAgent`'s sampling settings.
    """
    backend = backend_from_spec("smollm2", str(cache) if cache else None, offline)
    return LLMAgent(backend, **{**SMOLLM2_SAMPLING, **agent_kwargs})


def __getattr__(name: str) -> Any:
    """``agents.TrainableLM``, imported on first use (it loads torch, transformers and peft)."""
    if name == "TrainableLM":
        from agents.trainable_lm import TrainableLM

        return TrainableLM
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = [
    "SMOLLM2_SAMPLING",
    "SMOLLM2_TEMPERATURE",
    "SMOLLM2_TOP_K",
    "Answer",
    "Backend",
    "BackendError",
    "CachedBackend",
    "Confidence",
    "Generation",
    "GenerationRequest",
    "LLMAgent",
    "LogprobRequest",
    "LogprobResult",
    "PeerAnswer",
    "PrivilegedSolver",
    "ServerError",
    "SimulatedTeam",
    "Solver",
    "TextPolicy",
    "TrainableLM",
    "Turn",
    "make_backend",
    "smollm2_agent",
]
